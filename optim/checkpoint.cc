#include "optim/checkpoint.h"

#include "tensor/finite.h"
#include "tensor/parse_number.h"

namespace fuselab {

namespace {
const std::string kOptimizerPrefix = "optimizer.", kRunPrefix = "run.";
const std::string kModelAlone = "fuselab model";  // the format of save_checkpoint_parameters' files

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// The "run." entries of `all`, without the prefix.
template <class Map>
Map run_entries(const Map& all) {
  Map entries;
  for (const auto& [name, value] : all) {
    if (starts_with(name, kRunPrefix)) entries[name.substr(kRunPrefix.size())] = value;
  }
  return entries;
}

// The step in the metadata, which must be a non-negative integer and agree with the optimizer's
// own count (a flipped digit in either would silently skip or replay steps).
int64_t checked_step(const std::string& path, const Metadata& metadata, const NamedTensors& optimizer_state) {
  auto text = metadata.find("step");
  check(text != metadata.end(), "checkpoint ", path, ": no step in its metadata");
  const auto step = parse_int64(text->second);
  check(step && *step >= 0, "checkpoint ", path, ": metadata step '", text->second,
        "' is not a non-negative integer");
  auto counted = optimizer_state.find("step");
  if (counted != optimizer_state.end() && counted->second.dtype() == DType::Int64 && counted->second.numel() == 1) {
    const auto optimizer_steps = counted->second.to_vector<int64_t>()[0];
    check(optimizer_steps == *step, "checkpoint ", path, ": metadata step ", *step,
          " disagrees with the optimizer's step count ", optimizer_steps);
  }
  return *step;
}

// A setting's value as an error shows it: a long one (a tokenizer's model) by its start and size.
std::string shown(const std::string& value) {
  constexpr size_t kLong = 80;
  return value.size() <= kLong ? value : value.substr(0, 40) + "... (" + std::to_string(value.size()) + " bytes)";
}

// Each of this run's settings must have been saved, with the same value, and each saved one must
// be this run's (a model with experts records settings a dense one has none of).
void check_settings(const std::string& path, const Metadata& saved, const Metadata& wanted) {
  for (const auto& [name, value] : wanted) {
    auto it = saved.find(kRunPrefix + name);
    check(it != saved.end(), "checkpoint ", path, " does not record ", name, "; this run has ", name, "=",
          shown(value));
    check(it->second == value, "checkpoint ", path, " was saved with ", name, "=", shown(it->second),
          "; this run has ", name, "=", shown(value));
  }
  std::string lacking;
  for (const auto& [name, value] : run_entries(saved)) {
    if (!wanted.count(name)) lacking += " " + name + "=" + shown(value);
  }
  check(lacking.empty(), "checkpoint ", path, " was saved with settings this run has none of:", lacking);
}

// Every tensor of the file is finite, every one that is neither the optimizer's nor the run's is a
// parameter of `params`, and every parameter is there with its shape and dtype.
void check_parameters(const std::string& path, const Safetensors& file, const NamedTensors& params) {
  for (const auto& [name, value] : file.tensors) {
    if (!starts_with(name, kOptimizerPrefix) && !starts_with(name, kRunPrefix)) {
      check(params.count(name), "checkpoint ", path, ": tensor '", name, "' is not a parameter of the model");
    }
    const int64_t non_finite = count_non_finite(value);
    check(non_finite == 0, "checkpoint ", path, ": tensor '", name, "' holds ", non_finite,
          " NaN or infinite value(s)");
  }
  for (const auto& [name, param] : params) {
    auto it = file.tensors.find(name);
    check(it != file.tensors.end(), "checkpoint ", path, ": parameter '", name, "' is missing");
    check(it->second.shape() == param.shape() && it->second.dtype() == param.dtype(), "checkpoint ", path,
          ": parameter '", name, "' has shape ", it->second.shape(), " ", it->second.dtype(), ", the model has ",
          param.shape(), " ", param.dtype());
  }
}

}  // namespace

Metadata checkpoint_settings(const std::string& path) { return run_entries(load_safetensors(path).metadata); }

void load_checkpoint_parameters(const std::string& path, const NamedTensors& params) {
  const Safetensors file = load_safetensors(path);
  check_parameters(path, file, params);
  for (const auto& [name, param] : params) Tensor(param).copy_(file.tensors.at(name));
}

void save_checkpoint_parameters(const std::string& path, const NamedTensors& params, const Metadata& settings) {
  Metadata metadata = {{"format", kModelAlone}};
  for (const auto& [name, value] : settings) metadata[kRunPrefix + name] = value;
  save_safetensors(path, params, metadata);
}

void save_checkpoint(const std::string& path, const NamedTensors& params, const Optimizer& optimizer, int64_t step,
                     const RunState& run) {
  check(step == optimizer.steps(), "save_checkpoint ", path, ": step ", step, " disagrees with the optimizer's ",
        optimizer.steps(), " steps; a checkpoint with both could not be resumed");
  for (const auto& [name, value] : params) {
    check(!starts_with(name, kOptimizerPrefix) && !starts_with(name, kRunPrefix), "save_checkpoint ", path,
          ": parameter '", name, "' would collide with the optimizer's and the run's entries (", kOptimizerPrefix,
          "*, ", kRunPrefix, "*)");
  }
  NamedTensors tensors = params;
  for (const auto& [name, value] : optimizer.state()) tensors[kOptimizerPrefix + name] = value;
  for (const auto& [name, value] : run.tensors) tensors[kRunPrefix + name] = value;
  Metadata metadata = {{"step", std::to_string(step)}, {"format", "fuselab checkpoint"}};
  for (const auto& [name, value] : run.settings) metadata[kRunPrefix + name] = value;
  save_safetensors(path, tensors, metadata);
}

int64_t load_checkpoint(const std::string& path, const NamedTensors& params, Optimizer& optimizer, RunState* run) {
  Safetensors file = load_safetensors(path);
  const auto format = file.metadata.find("format");
  check(format == file.metadata.end() || format->second != kModelAlone, "checkpoint ", path,
        " holds a model alone (one imported, say), without the optimizer's state: training cannot resume from it");
  if (run) check_settings(path, file.metadata, run->settings);
  check_parameters(path, file, params);
  NamedTensors optimizer_state;
  for (const auto& [name, value] : file.tensors) {
    if (starts_with(name, kOptimizerPrefix)) optimizer_state[name.substr(kOptimizerPrefix.size())] = value;
  }
  const int64_t step = checked_step(path, file.metadata, optimizer_state);
  try {
    optimizer.load_state(optimizer_state);  // validates before anything is copied below
  } catch (const Error& e) {
    fail("checkpoint ", path, ": ", e.what());
  }
  for (const auto& [name, param] : params) Tensor(param).copy_(file.tensors.at(name));
  if (run) *run = {run_entries(file.tensors), run_entries(file.metadata)};
  return step;
}

}  // namespace fuselab
