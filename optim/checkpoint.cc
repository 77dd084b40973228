#include "optim/checkpoint.h"

#include <cstdlib>

namespace fuselab {

namespace {
const std::string kOptimizerPrefix = "optimizer.";
}  // namespace

void save_checkpoint(const std::string& path, const NamedTensors& params, const Optimizer& optimizer, int64_t step) {
  NamedTensors tensors = params;
  for (const auto& [name, value] : optimizer.state()) tensors[kOptimizerPrefix + name] = value;
  save_safetensors(path, tensors, {{"step", std::to_string(step)}, {"format", "fuselab checkpoint"}});
}

int64_t load_checkpoint(const std::string& path, const NamedTensors& params, Optimizer& optimizer) {
  Safetensors file = load_safetensors(path);
  auto step = file.metadata.find("step");
  check(step != file.metadata.end(), "checkpoint ", path, ": no step in its metadata");
  NamedTensors optimizer_state;
  for (const auto& [name, value] : file.tensors) {
    if (name.rfind(kOptimizerPrefix, 0) == 0) {
      optimizer_state[name.substr(kOptimizerPrefix.size())] = value;
    } else {
      check(params.count(name), "checkpoint ", path, ": tensor '", name, "' is not a parameter of the model");
    }
  }
  for (const auto& [name, param] : params) {
    auto it = file.tensors.find(name);
    check(it != file.tensors.end(), "checkpoint ", path, ": parameter '", name, "' is missing");
    check(it->second.shape() == param.shape() && it->second.dtype() == param.dtype(), "checkpoint ", path,
          ": parameter '", name, "' has shape ", it->second.shape(), " ", it->second.dtype(), ", the model has ",
          param.shape(), " ", param.dtype());
  }
  optimizer.load_state(optimizer_state);  // validates before anything is copied below
  for (const auto& [name, param] : params) Tensor(param).copy_(file.tensors.at(name));
  return std::strtoll(step->second.c_str(), nullptr, 10);
}

}  // namespace fuselab
