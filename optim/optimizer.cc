#include "optim/optimizer.h"

#include "tensor/factories.h"

namespace fuselab {
namespace {

// A copy of a state entry on `like`'s device; throws naming it unless it has like's shape and dtype.
Tensor checked_entry(const std::pair<const std::string, Tensor>& entry, const Tensor& like) {
  const auto& [name, value] = entry;
  check(value.shape() == like.shape() && value.dtype() == like.dtype(), "optimizer state: '", name, "' has shape ",
        value.shape(), " ", value.dtype(), ", the parameter's needs ", like.shape(), " ", like.dtype());
  return value.to(like.device()).clone();
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    check(p.defined() && p.is_leaf() && is_floating(p.dtype()), "optimizer: parameter ", i,
          " must be a floating leaf tensor");
    check(p.device() == params_[0].device(), "optimizer: parameter ", i, " of shape ", p.shape(), " is on ",
          p.device(), ", parameter 0 on ", params_[0].device(), " (one optimizer per device)");
    check(compute_dtype(p.dtype()) == compute_dtype(params_[0].dtype()), "optimizer: parameter ", i, " of shape ",
          p.shape(), " is ", p.dtype(), ", parameter 0 ", params_[0].dtype(), " (their updates must share a dtype)");
    masters_.push_back(p.dtype() == DType::BFloat16 ? p.detach().to(DType::Float32) : Tensor());
  }
}

void Optimizer::follow_parameters() {
  for (size_t k = 0; k < params_.size(); ++k) {
    const Tensor& p = params_[k];
    if (p.dtype() != DType::BFloat16) masters_[k] = Tensor();
    else masters_[k] = masters_[k].defined() ? masters_[k].to(p.device()) : p.detach().to(DType::Float32);
    const Tensor& w = weights(k);
    for (auto& of_name : buffers_) {
      if (of_name[k].defined()) of_name[k] = of_name[k].to(w.device()).to(w.dtype());
    }
  }
}

void Optimizer::step() {
  follow_parameters();
  std::vector<size_t> stepped;
  std::vector<Tensor> grads;
  for (size_t k = 0; k < params_.size(); ++k) {
    const Tensor& p = params_[k];
    const Tensor grad = p.grad();
    if (!grad.defined()) continue;
    check(grad.shape() == p.shape() && grad.device() == p.device(), "optimizer: parameter ", k, " of shape ",
          p.shape(), " on ", p.device(), " has a grad of shape ", grad.shape(), " on ", grad.device());
    if (!stepped.empty()) {  // a model converted only in part with BasicOp::to()
      const Tensor& first = params_[stepped[0]];
      check(p.device() == first.device() && compute_dtype(p.dtype()) == compute_dtype(first.dtype()),
            "optimizer: parameter ", k, " of shape ", p.shape(), " is ", p.dtype(), " on ", p.device(), ", parameter ",
            stepped[0], " ", first.dtype(), " on ", first.device(), " (one update dtype and device per optimizer)");
    }
    stepped.push_back(k);
    grads.push_back(grad.to(weights(k).dtype()));
  }
  if (!stepped.empty()) update(stepped, grads);
  for (size_t k : stepped) {
    if (masters_[k].defined()) params_[k].copy_(masters_[k].to(DType::BFloat16));
  }
  ++steps_;
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

Tensor& Optimizer::buffer(size_t name_index, size_t param_index) {
  if (buffers_.empty()) buffers_.resize(buffer_names().size(), std::vector<Tensor>(params_.size()));
  Tensor& b = buffers_[name_index][param_index];
  if (!b.defined()) b = zeros_like(weights(param_index));
  return b;
}

Tensor Optimizer::saved(const Tensor& t, size_t k) const {
  const Tensor host = t.to(Device::cpu()).to(compute_dtype(params_[k].dtype()));
  return host.same(t) ? t.clone() : host;
}

NamedTensors Optimizer::state() const {
  // Saved from the CPU, whatever the device, and as follow_parameters() would leave it.
  NamedTensors state{{"step", from_vector<int64_t>({steps_}, {1})}};
  const auto names = buffer_names();
  for (size_t n = 0; n < names.size() && n < buffers_.size(); ++n) {
    for (size_t i = 0; i < params_.size(); ++i) {
      const Tensor& b = buffers_[n][i];
      if (b.defined()) state[names[n] + "." + std::to_string(i)] = saved(b, i);
    }
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].dtype() != DType::BFloat16) continue;
    state["master." + std::to_string(i)] = saved(masters_[i].defined() ? masters_[i] : params_[i], i);
  }
  return state;
}

void Optimizer::load_state(const NamedTensors& state) {
  auto step = state.find("step");
  check(step != state.end() && step->second.dtype() == DType::Int64 && step->second.numel() == 1,
        "optimizer state: missing int64 entry 'step'");
  follow_parameters();  // the entries are checked against the parameters as they are now
  const int64_t steps = step->second.to_vector<int64_t>()[0];
  check(steps >= 0, "optimizer state: step ", steps, " is negative");
  const auto names = buffer_names();
  std::vector<std::vector<Tensor>> loaded(names.size(), std::vector<Tensor>(params_.size()));
  for (size_t n = 0; n < names.size(); ++n) {
    for (size_t i = 0; i < params_.size(); ++i) {
      auto it = state.find(names[n] + "." + std::to_string(i));
      if (it == state.end()) continue;  // that parameter had no grad yet
      loaded[n][i] = checked_entry(*it, weights(i));
    }
  }
  std::vector<Tensor> masters = masters_;
  for (size_t i = 0; i < masters.size(); ++i) {
    auto it = state.find("master." + std::to_string(i));
    if (masters[i].defined() && it != state.end()) masters[i] = checked_entry(*it, masters[i]);
  }
  for (const auto& [name, value] : state) {
    bool known = name == "step" || name.rfind("master.", 0) == 0;
    for (size_t n = 0; n < names.size() && !known; ++n) known = name.rfind(names[n] + ".", 0) == 0;
    check(known, "optimizer state: unexpected entry '", name, "'");
  }
  buffers_ = std::move(loaded);
  masters_ = std::move(masters);
  steps_ = steps;
}

}  // namespace fuselab
