// A user-defined basic op and user-defined forward and backward fusions, registered from user
// code through the same calls the built-in fusions use.
//
//   bazel run //examples:custom_fusion
//
// The basic op is Square (y = x^2). The forward fusion ForwardLinearSquare computes x W^T and
// squares it while the GEMM output is hot, and fills the contexts that the unfused Linear and
// Square backward read. The backward fusion BackwardSquareScale turns Square then ConstantScale
// into one pass: dx = 2 s x dy.
#include <cstdio>

#include "autograd/functional.h"
#include "ops/fuse_window.h"
#include "fuser/sequential.h"
#include "ops/basic/constant_scale.h"
#include "ops/basic/linear.h"
#include "ops/fused_op.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

using namespace fuselab;

// --- a basic op: y = x^2,  dx = 2 x dy -------------------------------------------------------
struct SquareSaved {
  Tensor input;
};

class Square : public BasicOp {
 public:
  Square() : BasicOp("Square") {}
  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override {
    if (ctx.requires_backward()) ctx.save<SquareSaved>().input = x;
    return {math::binary(math::BinaryOp::Mul, x, x), {}};
  }
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override {
    const Tensor& x = ctx.saved<SquareSaved>(describe()).input;
    return {math::scaled(math::binary(math::BinaryOp::Mul, dy, x), 2), {}, {}};
  }
};

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

struct Result {
  std::vector<float> y, dx, dw;
};

Result run(Sequential& seq, const Tensor& x_value) {
  Tensor x = x_value.clone();
  x.set_requires_grad(true);
  seq.zero_grad();
  const Tensor y = seq(x);
  backward(sum(y));
  return {y.to_vector<float>(), x.grad().to_vector<float>(), seq.parameters()[0].grad().to_vector<float>()};
}

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])) / (1e-6 + std::abs(b[i])));
  return worst;
}

int main() {
  manual_seed(0);
  Sequential seq({std::make_shared<Linear>(8, 8), std::make_shared<Square>(), std::make_shared<ConstantScale>(0.5)});
  std::printf("Before registering the user fusions:\n%s\n\n", seq.describe().c_str());

  // A fusion function takes the op list (and read-only facts) and returns the rewritten list.
  // fuse_pairs slides a two-op window over it, matching on basic-op types; fuse_window is the
  // general form for longer or optional patterns.
  register_forward_fusion("ForwardLinearSquare", [](OpList ops, const FusionFacts&) {
    return fuse_pairs<Linear, Square, ForwardLinearSquare>(ops);
  });
  register_backward_fusion("BackwardSquareScale", [](OpList ops, const FusionFacts&) {
    return fuse_pairs<Square, ConstantScale, BackwardSquareScale>(ops);
  });
  std::printf("After:\n%s\n\n", seq.describe().c_str());

  const Tensor x = randn({16, 8});
  const Result fused = run(seq, x);
  seq.set_fusion_enabled(false);
  const Result unfused = run(seq, x);
  const double worst = std::max({max_difference(fused.y, unfused.y), max_difference(fused.dx, unfused.dx),
                                 max_difference(fused.dw, unfused.dw)});
  std::printf("fused vs unfused, max relative difference over y, dx, dW: %.2e\n", worst);
  if (worst > 1e-5) {
    std::printf("MISMATCH\n");
    return 1;
  }
  std::printf("fused and unfused agree\n");
  return 0;
}
