// Optimizer: updates a fixed list of parameters from their grads, and saves and restores its
// state (per-parameter buffers, the step count and the parameter groups) as named tensors, for
// checkpoints.
//
// Parameter groups, as torch.optim's param_groups: each group of parameters has its own learning
// rate and weight decay (the optimizer's options where the group leaves them unset), e.g. decay on
// weight matrices only. params() lists group 0's parameters, then group 1's, and so on; a
// parameter in two groups is refused. An lr schedule multiplies every group's base lr by one
// scale (set_lr_scale), as PyTorch's schedulers scale each group's initial lr. A step runs one
// kernel launch per group over every parameter of the group that has a grad.
//
// bfloat16 parameters train through float32 master weights: the update runs on a float32 copy
// of the parameter (with the grad widened to float32 and float32 buffers), and the parameter is
// that copy rounded. Updates far below a bfloat16 ulp still add up in the master, where applied
// to the bfloat16 parameter directly they would round away.
//
// It holds the parameters' handles, and Sequential::to() converts parameters in place, so a model
// moved or converted after the optimizer was made is still the one it trains. Its state follows
// the parameters, as PyTorch's load_state_dict casts state to them: step(), state() and
// load_state() first move each buffer and master to its parameter's device and cast the buffers
// to its update dtype (float32 for bfloat16, else the parameter's). A parameter that became
// bfloat16 gets a master made from its rounded value; one that stopped being bfloat16 drops its
// master and trains on from the value it holds.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/optimizer_steps.h"
#include "tensor/launch.h"
#include "tensor/safetensors.h"  // NamedTensors
#include "tensor/tensor.h"

namespace fuselab {

// One entry of an optimizer's parameter groups; what it leaves unset is the optimizer's option.
// AdamW({{matrices}, {others, /*weight_decay=*/0.0}}, options) decays only `matrices`.
struct ParamGroup {
  std::vector<Tensor> params;
  std::optional<double> weight_decay;
  std::optional<double> lr;
};

// A group's hyper-parameters as the optimizer holds them: its lr before the schedule's scale.
struct GroupHyper {
  double lr, weight_decay;
};

class Optimizer {
 public:
  // The largest lr a loaded state may hold. Far above any lr that trains (the examples' flags stop
  // at 10): a state with more is damaged, and would turn every weight into noise in one step.
  static constexpr double kLargestLr = 1e3;

  // `name` ("AdamW") and the options' lr and weight decay, the defaults of every group. Throws,
  // naming the group, on a negative lr or weight decay, an lr above kLargestLr, an infinite weight
  // decay, and on a parameter given twice.
  Optimizer(const char* name, std::vector<ParamGroup> groups, GroupHyper defaults);
  virtual ~Optimizer() = default;

  // Parameters without a grad are skipped. Throws naming the parameter when its grad's shape or
  // device is not its own, or when the stepped parameters no longer share a device and update dtype.
  void step();
  void zero_grad();

  // Group g steps with lr(g) = groups()[g].lr * scale; the scale starts at 1.
  void set_lr_scale(double scale);
  double lr(size_t group = 0) const;
  const std::vector<GroupHyper>& groups() const { return groups_; }
  int64_t steps() const { return steps_; }
  const std::vector<Tensor>& params() const { return params_; }

  // "step"; "group.<g>.params" (its parameter count), "group.<g>.lr" and "group.<g>.weight_decay"
  // for each group; one entry per buffer, named "<buffer>.<parameter index>"; and
  // "master.<index>" for each bfloat16 parameter.
  NamedTensors state() const;
  // Restores the buffers, the step count and each group's lr and weight decay (as torch's
  // load_state_dict). Throws, changing nothing, naming the entry if a buffer has the wrong shape or
  // dtype, if a parameter has some of its buffers but not all (a parameter that never had a grad
  // has none), if an entry is for a parameter the optimizer does not have, or if a buffer holds
  // values it cannot (a negative second moment); and naming the group if the groups differ in
  // number or size or an lr or weight decay is negative, not finite or above kLargestLr. A state
  // saved without groups (before they existed) loads only into an optimizer of one group, whose
  // hyper-parameters it keeps.
  void load_state(const NamedTensors& state);

 protected:
  // Updates weights(k) from grads[i] for each k = stepped[i], all of one group, dtype and device,
  // with the group's lr (scaled) and weight decay.
  virtual void update(const GroupHyper& group, const std::vector<size_t>& stepped,
                      const std::vector<Tensor>& grads) = 0;
  // Buffers per parameter, e.g. {"exp_avg", "exp_avg_sq"}; created zeroed on first use, in the
  // weights' dtype.
  virtual std::vector<std::string> buffer_names() const = 0;
  // The buffers whose values cannot be negative (a mean of squares); load_state refuses them.
  virtual std::vector<std::string> non_negative_buffers() const { return {}; }
  Tensor& buffer(size_t name_index, size_t param_index);
  // What update() changes: the parameter, or its float32 master when it is bfloat16.
  Tensor& weights(size_t k) { return masters_[k].defined() ? masters_[k] : params_[k]; }

  // For update(): one Step kernel (kernels/optimizer_steps.h) over every stepped parameter. Each
  // entry holds the weights, the grad, the first `buffers` buffers (null beyond) and the size.
  template <template <class> class Step, class Hyper>
  void step_all(const char* name, const std::vector<size_t>& stepped, const std::vector<Tensor>& grads, int buffers,
                const Hyper& hyper) {
    launch_floating(name, weights(stepped[0]), [&](auto zero) {
      return Step<decltype(zero)>{pointers<decltype(zero)>(stepped, grads, buffers), hyper};
    });
  }

  int64_t steps_ = 0;

 private:
  std::vector<Tensor> params_;
  std::vector<GroupHyper> groups_;
  std::vector<size_t> group_of_;              // [param]
  double lr_scale_ = 1;
  std::vector<std::vector<Tensor>> buffers_;  // [name][param]
  std::vector<Tensor> masters_;               // float32 copies of the bfloat16 parameters

  // Moves and casts the buffers and masters after their parameters (see the top of this file).
  void follow_parameters();
  // The buffers in `state`, [name][param] (undefined where the parameter has none), checked.
  std::vector<std::vector<Tensor>> loaded_buffers(const NamedTensors& state);
  // Throws naming `name` unless it is one of the entries state() writes for this optimizer.
  void check_known_entry(const std::string& name, size_t groups) const;
  int64_t group_size(size_t group) const;
  // The groups' hyper-parameters in `state`, checked against the optimizer's groups (its own
  // for a state saved without groups).
  std::vector<GroupHyper> loaded_groups(const NamedTensors& state) const;
  // t as state() saves it for parameter k: a copy on the CPU in k's update dtype.
  Tensor saved(const Tensor& t, size_t k) const;

  template <class T>
  std::vector<kernels::ParamBuffers<T>> pointers(const std::vector<size_t>& stepped, const std::vector<Tensor>& grads,
                                                 int buffers) {
    auto ptr = [](const Tensor& t) { return t.ptr<T>(); };
    std::vector<kernels::ParamBuffers<T>> all;
    for (size_t i = 0; i < stepped.size(); ++i) {
      const size_t k = stepped[i];
      all.push_back({ptr(weights(k)), ptr(grads[i]), buffers > 0 ? ptr(buffer(0, k)) : nullptr,
                     buffers > 1 ? ptr(buffer(1, k)) : nullptr, weights(k).numel()});
    }
    return all;
  }
};

}  // namespace fuselab
