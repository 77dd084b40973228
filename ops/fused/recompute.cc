#include "ops/fused/recompute.h"

#include "ops/basic/activation.h"
#include "ops/basic/dropout.h"
#include "ops/basic/gated_linear_unit.h"
#include "ops/basic/linear.h"
#include "ops/basic/norm_op.h"
#include "ops/basic/rmsnorm.h"
#include "ops/fuse_window.h"

namespace fuselab {
namespace {

// The run's ops are called directly, outside the fuser, so the forward's contexts must save
// nothing: a copy of the op's context that asks for no backward.
OpContext without_backward(const OpContext& ctx) {
  OpContext copy;
  copy.training = ctx.training;
  copy.call_args = ctx.call_args;
  copy.params_require_grad.assign(ctx.params_require_grad.size(), false);
  return copy;
}

}  // namespace

Recompute::Recompute(const OpList& ops) : FusedOp("Recompute", ops, Pass::ForwardBackward) {}

FusedForward Recompute::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x, const TensorLists&) {
  Tensor h = x;
  for (size_t i = 0; i < basic_ops().size(); ++i) {
    OpContext scratch = without_backward(*ctxs[i]);
    h = basic_ops()[i]->op_forward(scratch, h, {}).output;
  }
  for (OpContext* ctx : ctxs) {
    if (ctx->requires_backward()) {
      ctxs[0]->save<RecomputeSaved>().input = x;
      break;
    }
  }
  return {h, TensorLists(basic_ops().size())};
}

FusedBackward Recompute::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy, const TensorLists&) {
  const std::vector<std::shared_ptr<BasicOp>> ops = basic_ops();
  Tensor h = ctxs[0]->saved<RecomputeSaved>(describe()).input;  // replaced below by op 0's own state
  for (size_t i = 0; i < ops.size(); ++i) h = ops[i]->op_forward(*ctxs[i], h, {}).output;
  FusedBackward grads{Tensor(), TensorLists(ops.size()), TensorLists(ops.size())};
  Tensor grad = dy;
  for (size_t i = ops.size(); i-- > 0;) {
    OpBackward b = ops[i]->op_backward(*ctxs[i], grad, {});
    grads.grad_params[i] = std::move(b.grad_params);
    grad = std::move(b.grad_input);
  }
  grads.grad_input = grad;
  return grads;
}

std::optional<RecomputeScope> parse_recompute_scope(const std::string& word) {
  if (word == "none") return std::nullopt;
  if (word == "mlp") return RecomputeScope::MLP;
  if (word == "norms") return RecomputeScope::Norms;
  if (word == "block") return RecomputeScope::Block;
  fail("recompute: expected none, mlp, norms or block, got '", word, "'");
  return std::nullopt;
}

namespace {

// Reason: a recomputed run starts again from its input alone, and a Dropout would draw a new mask.
bool recomputable(const BasicOp& op) {
  return op.num_extra_inputs() == 0 && op.num_extra_outputs() == 0 && !dynamic_cast<const Dropout*>(&op);
}

// How many ops from the window's start form a recomputable run.
size_t run_length(const BasicOpWindow& window) {
  size_t n = 0;
  while (n < window.size() && recomputable(*window[n])) ++n;
  return n;
}

bool holds_activation(const BasicOpWindow& window, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (as<ActivationOp>(window[i]) || as<GatedLinearUnit>(window[i])) return true;
  }
  return false;
}

std::optional<WindowMatch> match(RecomputeScope scope, const BasicOpWindow& window) {
  switch (scope) {
    case RecomputeScope::Norms:
      if (window.size() < 2 || !as<NormOp>(window[0]) || !as<Linear>(window[1])) return std::nullopt;
      return WindowMatch{2, std::make_shared<Recompute>(first_ops(window, 2))};
    case RecomputeScope::MLP:
    case RecomputeScope::Block: {
      const size_t n = run_length(window);
      // A run of one op gains nothing: its input is what it saves anyway, or close to it.
      if (n < 2 || (scope == RecomputeScope::MLP && !holds_activation(window, n))) return std::nullopt;
      return WindowMatch{n, std::make_shared<Recompute>(first_ops(window, n))};
    }
  }
  return std::nullopt;
}

const char* scope_name(RecomputeScope scope) {
  switch (scope) {
    case RecomputeScope::MLP: return "RecomputeMLP";
    case RecomputeScope::Norms: return "RecomputeNorms";
    case RecomputeScope::Block: return "RecomputeBlock";
  }
  return "?";
}

}  // namespace

FusionDefinition recompute_fusion(RecomputeScope scope) {
  // Only a call that records a backward keeps activations; one that does not has nothing to save.
  FusionFunction fn = [scope](OpList ops, const FusionFacts& facts) {
    if (!facts.grad_enabled) return ops;
    constexpr size_t kLongestRun = 64;
    return fuse_window(ops, kLongestRun, [scope](const BasicOpWindow& w) { return match(scope, w); });
  };
  // Example: a pre-norm SwiGLU MLP branch, which every scope takes.
  FusionExampleMaker example = [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
    return make_fusion_example({std::make_shared<RMSNorm>(w), std::make_shared<Linear>(w, 2 * w, &gen),
                                std::make_shared<SwiGLU>(), std::make_shared<Linear>(w, w, &gen)},
                               rows, w, dtype, gen);
  };
  return {scope_name(scope), Pass::ForwardBackward, fn, example};
}

}  // namespace fuselab
