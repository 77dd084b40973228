#include "optim/optimizer.h"

#include "tensor/factories.h"

namespace fuselab {

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    check(p.defined() && p.is_leaf() && is_floating(p.dtype()), "optimizer: parameter ", i,
          " must be a floating leaf tensor");
    check(p.device() == params_[0].device(), "optimizer: parameter ", i, " of shape ", p.shape(), " is on ",
          p.device(), ", parameter 0 on ", params_[0].device(), " (one optimizer per device)");
  }
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

Tensor& Optimizer::buffer(size_t name_index, size_t param_index) {
  if (buffers_.empty()) buffers_.resize(buffer_names().size(), std::vector<Tensor>(params_.size()));
  Tensor& b = buffers_[name_index][param_index];
  if (!b.defined()) b = zeros_like(params_[param_index]);
  return b;
}

std::vector<size_t> Optimizer::params_with_grad() const {
  std::vector<size_t> indices;
  for (size_t k = 0; k < params_.size(); ++k) {
    if (params_[k].grad().defined()) indices.push_back(k);
  }
  return indices;
}

NamedTensors Optimizer::state() const {
  NamedTensors state{{"step", from_vector<int64_t>({steps_}, {1})}};
  const auto names = buffer_names();
  for (size_t n = 0; n < names.size() && n < buffers_.size(); ++n) {
    for (size_t i = 0; i < params_.size(); ++i) {
      const Tensor& b = buffers_[n][i];  // saved from the CPU, whatever the device
      if (b.defined()) state[names[n] + "." + std::to_string(i)] = b.device().is_cpu() ? b.clone() : b.to(Device::cpu());
    }
  }
  return state;
}

void Optimizer::load_state(const NamedTensors& state) {
  auto step = state.find("step");
  check(step != state.end() && step->second.dtype() == DType::Int64 && step->second.numel() == 1,
        "optimizer state: missing int64 entry 'step'");
  const auto names = buffer_names();
  std::vector<std::vector<Tensor>> loaded(names.size(), std::vector<Tensor>(params_.size()));
  for (size_t n = 0; n < names.size(); ++n) {
    for (size_t i = 0; i < params_.size(); ++i) {
      auto it = state.find(names[n] + "." + std::to_string(i));
      if (it == state.end()) continue;  // that parameter had no grad yet
      check(it->second.shape() == params_[i].shape() && it->second.dtype() == params_[i].dtype(),
            "optimizer state: '", it->first, "' has shape ", it->second.shape(), " ", it->second.dtype(),
            ", the parameter has ", params_[i].shape(), " ", params_[i].dtype());
      loaded[n][i] = it->second.to(params_[i].device()).clone();
    }
  }
  for (const auto& [name, value] : state) {
    bool known = name == "step";
    for (size_t n = 0; n < names.size() && !known; ++n) known = name.rfind(names[n] + ".", 0) == 0;
    check(known, "optimizer state: unexpected entry '", name, "'");
  }
  buffers_ = std::move(loaded);
  steps_ = int64_t(step->second.item());
}

}  // namespace fuselab
