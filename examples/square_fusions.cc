// Square and its two user fusions (see square_fusions.h).
#include "examples/square_fusions.h"

#include "fuser/registry.h"
#include "ops/basic/constant_scale.h"
#include "ops/basic/linear.h"
#include "ops/fuse_window.h"
#include "ops/fused_op.h"
#include "tensor/tensor_math.h"

namespace fuselab::examples {

OpForward Square::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  if (ctx.requires_backward()) ctx.save<SquareSaved>().input = x;
  return {math::binary(math::BinaryOp::Mul, x, x), {}};
}

OpBackward Square::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const Tensor& x = ctx.saved<SquareSaved>(describe()).input;
  return {math::scaled(math::binary(math::BinaryOp::Mul, dy, x), 2), {}, {}};
}

namespace {

// --- a forward fusion: Linear then Square ---------------------------------------------------
class ForwardLinearSquare : public FusedOp {
 public:
  explicit ForwardLinearSquare(const OpList& ops) : FusedOp("ForwardLinearSquare", ops, Pass::Forward) {}
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x, const TensorLists&) override {
    Linear& linear = op<Linear>(0);
    const Tensor pre = math::matmul(x, false, linear.weight(), true);
    Linear::save_for_backward(*ctxs[0], x, linear.weight());          // what Linear's backward reads
    if (ctxs[1]->requires_backward()) ctxs[1]->save<SquareSaved>().input = pre;  // and Square's
    return {math::binary(math::BinaryOp::Mul, pre, pre), TensorLists(2)};
  }
};

// --- a backward fusion: Square then ConstantScale --------------------------------------------
class BackwardSquareScale : public FusedOp {
 public:
  explicit BackwardSquareScale(const OpList& ops) : FusedOp("BackwardSquareScale", ops, Pass::Backward) {}
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy, const TensorLists&) override {
    const Tensor& x = ctxs[0]->saved<SquareSaved>("BackwardSquareScale").input;
    const double s = op<ConstantScale>(1).scale();
    return {math::scaled(math::binary(math::BinaryOp::Mul, dy, x), 2 * s), TensorLists(2), TensorLists(2)};
  }
};

}  // namespace

void register_square_fusions() {
  // A fusion function takes the op list (and read-only facts) and returns the rewritten list.
  // fuse_pairs slides a two-op window over it, matching on basic-op types; fuse_window is the
  // general form for longer or optional patterns.
  register_forward_fusion("ForwardLinearSquare", [](OpList ops, const FusionFacts&) {
    return fuse_pairs<Linear, Square, ForwardLinearSquare>(ops);
  });
  register_backward_fusion("BackwardSquareScale", [](OpList ops, const FusionFacts&) {
    return fuse_pairs<Square, ConstantScale, BackwardSquareScale>(ops);
  });
}

}  // namespace fuselab::examples
