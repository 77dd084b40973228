// The built-in fusion functions, registered at startup through the public registry calls, in
// priority order. Patterns are written in forward order for both passes.
//
//   forward:  ForwardLinearBiasAdd         Linear [Bias] AddExtraInput
//             ForwardLinearBiasActivation  Linear Bias [ReLU|GELU|SiLU]
//   backward: BackwardLinearAdd            MakeExtraOutput Linear
//             BackwardActivationBias       Bias ReLU|GELU|SiLU
//             BackwardAddRMSNorm           MakeExtraOutput RMSNorm
#include "fuser/fuse_window.h"
#include "fuser/registry.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/bias.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "ops/fused/backward_activation_bias.h"
#include "ops/fused/backward_add_rmsnorm.h"
#include "ops/fused/backward_linear_add.h"
#include "ops/fused/forward_linear_bias_activation.h"
#include "ops/fused/forward_linear_bias_add.h"

namespace fuselab {
namespace {

// The fused kernels are CPU kernels so far.
bool on_cpu(const FusionFacts& facts) { return facts.device.is_cpu(); }

// A Bias right after a Linear that it fits.
bool bias_fits(const BasicOpWindow& w, size_t i) {
  return i < w.size() && as<Bias>(w[i]) && as<Bias>(w[i])->features() == as<Linear>(w[0])->out_features();
}

OpList fuse_forward_linear_bias_add(OpList ops, const FusionFacts& facts) {
  if (!on_cpu(facts)) return ops;
  return fuse_window(ops, 3, [](const BasicOpWindow& w) -> std::optional<WindowMatch> {
    if (!as<Linear>(w[0])) return std::nullopt;
    const size_t add = bias_fits(w, 1) ? 2 : 1;
    if (add >= w.size() || !as<AddExtraInput>(w[add])) return std::nullopt;
    return WindowMatch{add + 1, std::make_shared<ForwardLinearBiasAdd>(first_ops(w, add + 1))};
  });
}

OpList fuse_forward_linear_bias_activation(OpList ops, const FusionFacts& facts) {
  if (!on_cpu(facts)) return ops;
  return fuse_window(ops, 3, [](const BasicOpWindow& w) -> std::optional<WindowMatch> {
    if (!as<Linear>(w[0]) || !bias_fits(w, 1)) return std::nullopt;
    const size_t count = w.size() > 2 && as<ActivationOp>(w[2]) ? 3 : 2;
    return WindowMatch{count, std::make_shared<ForwardLinearBiasActivation>(first_ops(w, count))};
  });
}

template <class First, class Second, class Fused>
OpList fuse_pair(OpList ops, const FusionFacts& facts) {
  return on_cpu(facts) ? fuse_pairs<First, Second, Fused>(ops) : ops;
}

const bool kRegistered = [] {
  register_forward_fusion("ForwardLinearBiasAdd", fuse_forward_linear_bias_add);
  register_forward_fusion("ForwardLinearBiasActivation", fuse_forward_linear_bias_activation);
  register_backward_fusion("BackwardLinearAdd", fuse_pair<MakeExtraOutput, Linear, BackwardLinearAdd>);
  register_backward_fusion("BackwardActivationBias", fuse_pair<Bias, ActivationOp, BackwardActivationBias>);
  register_backward_fusion("BackwardAddRMSNorm", fuse_pair<MakeExtraOutput, RMSNorm, BackwardAddRMSNorm>);
  return true;
}();

}  // namespace
}  // namespace fuselab
