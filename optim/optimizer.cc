#include "optim/optimizer.h"

#include <algorithm>
#include <cmath>

#include "tensor/factories.h"
#include "tensor/parse_number.h"

namespace fuselab {
namespace {

// A copy of a state entry on `like`'s device; throws naming it unless it has like's shape and dtype.
Tensor checked_entry(const std::pair<const std::string, Tensor>& entry, const Tensor& like) {
  const auto& [name, value] = entry;
  check(value.shape() == like.shape() && value.dtype() == like.dtype(), "optimizer state: '", name, "' has shape ",
        value.shape(), " ", value.dtype(), ", the parameter's needs ", like.shape(), " ", like.dtype());
  return value.to(like.device()).clone();
}

// The one value of entry `name`, which must hold exactly one T.
template <class T>
T single_value(const NamedTensors& state, const std::string& name) {
  auto it = state.find(name);
  check(it != state.end() && it->second.dtype() == dtype_of<T>() && it->second.numel() == 1,
        "optimizer state: missing ", dtype_of<T>(), " entry '", name, "'");
  return it->second.to_vector<T>()[0];
}

double lowest_value(const Tensor& t) {
  const std::vector<double> values = t.to(Device::cpu()).to(DType::Float64).to_vector<double>();
  return values.empty() ? 0 : *std::min_element(values.begin(), values.end());
}

std::string group_entry(size_t group, const char* field) { return "group." + std::to_string(group) + "." + field; }
const char* const kGroupFields[] = {"params", "lr", "weight_decay"};

// A group's hyper-parameters within the limits load_state holds a saved state to, so that a run never
// saves a state it cannot resume.
void check_group_hyper(const std::string& who, size_t g, const GroupHyper& hyper) {
  check(hyper.lr >= 0 && hyper.lr <= Optimizer::kLargestLr && hyper.weight_decay >= 0 &&
            std::isfinite(hyper.weight_decay),
        who, ": group ", g, ": lr ", hyper.lr, " must be in [0, ", Optimizer::kLargestLr, "] and weight_decay ",
        hyper.weight_decay, " finite and not negative");
}

}  // namespace

Optimizer::Optimizer(const char* name, std::vector<ParamGroup> groups, GroupHyper defaults) {
  for (size_t g = 0; g < groups.size(); ++g) {
    const GroupHyper hyper{groups[g].lr.value_or(defaults.lr), groups[g].weight_decay.value_or(defaults.weight_decay)};
    check_group_hyper(name, g, hyper);
    groups_.push_back(hyper);
    for (Tensor& p : groups[g].params) {
      for (size_t k = 0; k < params_.size(); ++k) {
        check(!p.same(params_[k]), name, ": a parameter of shape ", p.shape(), " is in group ", group_of_[k],
              " and again in group ", g, " (each parameter belongs to one group, once)");
      }
      params_.push_back(std::move(p));
      group_of_.push_back(g);
    }
  }
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

void Optimizer::set_lr_scale(double scale) {
  check(scale >= 0 && std::isfinite(scale), "optimizer: lr scale ", scale, " must be finite and not negative");
  lr_scale_ = scale;
}

double Optimizer::lr(size_t group) const {
  check(group < groups_.size(), "optimizer: no group ", group, ", it has ", groups_.size());
  return lr_scale_ * groups_[group].lr;
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
  for (size_t g = 0; g < groups_.size(); ++g) {  // one update per group, over its stepped parameters
    std::vector<size_t> in_group;
    std::vector<Tensor> group_grads;
    for (size_t i = 0; i < stepped.size(); ++i) {
      if (group_of_[stepped[i]] != g) continue;
      in_group.push_back(stepped[i]);
      group_grads.push_back(grads[i]);
    }
    if (!in_group.empty()) update({lr(g), groups_[g].weight_decay}, in_group, group_grads);
  }
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
  for (size_t g = 0; g < groups_.size(); ++g) {
    state[group_entry(g, "params")] = from_vector<int64_t>({group_size(g)}, {1});
    state[group_entry(g, "lr")] = from_vector<double>({groups_[g].lr}, {1});
    state[group_entry(g, "weight_decay")] = from_vector<double>({groups_[g].weight_decay}, {1});
  }
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
  const int64_t steps = single_value<int64_t>(state, "step");
  check(steps >= 0, "optimizer state: step ", steps, " is negative");
  std::vector<GroupHyper> groups = loaded_groups(state);
  follow_parameters();  // the entries are checked against the parameters as they are now
  for (const auto& entry : state) check_known_entry(entry.first, groups.size());
  std::vector<std::vector<Tensor>> loaded = loaded_buffers(state);
  std::vector<Tensor> masters = masters_;
  for (size_t i = 0; i < masters.size(); ++i) {
    auto it = state.find("master." + std::to_string(i));
    if (masters[i].defined() && it != state.end()) masters[i] = checked_entry(*it, masters[i]);
  }
  buffers_ = std::move(loaded);
  masters_ = std::move(masters);
  groups_ = std::move(groups);
  steps_ = steps;
}

std::vector<std::vector<Tensor>> Optimizer::loaded_buffers(const NamedTensors& state) {
  const auto names = buffer_names(), non_negative = non_negative_buffers();
  std::vector<std::vector<Tensor>> loaded(names.size(), std::vector<Tensor>(params_.size()));
  for (size_t i = 0; i < params_.size(); ++i) {
    std::string present, missing;  // a parameter's buffers are all there, or none (it had no grad)
    for (size_t n = 0; n < names.size(); ++n) {
      const std::string name = names[n] + "." + std::to_string(i);
      auto it = state.find(name);
      (it == state.end() ? missing : present) = name;
      if (it == state.end()) continue;
      loaded[n][i] = checked_entry(*it, weights(i));
      if (std::find(non_negative.begin(), non_negative.end(), names[n]) == non_negative.end()) continue;
      const double lowest = lowest_value(loaded[n][i]);
      check(lowest >= 0, "optimizer state: '", name, "' holds ", lowest, ", but it is a mean of squares");
    }
    check(present.empty() || missing.empty(), "optimizer state: '", missing, "' is missing, but '", present,
          "' is there: the state of parameter ", i, " is incomplete");
  }
  return loaded;
}

void Optimizer::check_known_entry(const std::string& name, size_t groups) const {
  if (name == "step") return;
  for (size_t g = 0; g < groups; ++g) {
    for (const char* field : kGroupFields) {
      if (name == group_entry(g, field)) return;
    }
  }
  std::vector<std::string> per_parameter = buffer_names();
  per_parameter.push_back("master");
  for (const std::string& prefix : per_parameter) {
    if (name.rfind(prefix + ".", 0) != 0) continue;
    const auto index = parse_int64(name.substr(prefix.size() + 1));
    check(index && *index >= 0 && *index < int64_t(params_.size()), "optimizer state: entry '", name,
          "' is for no parameter: the optimizer has ", params_.size(), " (0 to ", int64_t(params_.size()) - 1, ")");
    return;
  }
  fail("optimizer state: unexpected entry '", name, "'");
}

int64_t Optimizer::group_size(size_t group) const {
  return int64_t(std::count(group_of_.begin(), group_of_.end(), group));
}

std::vector<GroupHyper> Optimizer::loaded_groups(const NamedTensors& state) const {
  const bool has_groups = std::any_of(state.begin(), state.end(), [](const auto& entry) {
    return entry.first.rfind("group.", 0) == 0;
  });
  if (!has_groups) {  // saved before groups existed, from a single list of parameters
    check(groups_.size() == 1, "optimizer state: saved without parameter groups, so it loads only into an "
          "optimizer of one group; this one has ", groups_.size());
    return groups_;
  }
  size_t saved = 0;
  while (state.count(group_entry(saved, "params"))) ++saved;
  check(saved == groups_.size(), "optimizer state: has ", saved, " parameter groups, the optimizer ", groups_.size());
  std::vector<GroupHyper> groups;
  for (size_t g = 0; g < saved; ++g) {
    const int64_t size = single_value<int64_t>(state, group_entry(g, "params"));
    check(size == group_size(g), "optimizer state: group ", g, " has ", size, " parameters, the optimizer's group ",
          g, " has ", group_size(g));
    const GroupHyper hyper{single_value<double>(state, group_entry(g, "lr")),
                           single_value<double>(state, group_entry(g, "weight_decay"))};
    check_group_hyper("optimizer state", g, hyper);
    groups.push_back(hyper);
  }
  return groups;
}

}  // namespace fuselab
