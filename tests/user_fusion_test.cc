// User-defined ops and fusions, registered from user code exactly like the built-ins, mirroring
// the reference's tests: a custom basic op with a parameter, forward-only, backward-only and
// joint fused ops, registration after first use, and unregistering.
#include <gtest/gtest.h>

#include "autograd/functional.h"
#include "ops/fuse_window.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/constant_scale.h"
#include "ops/basic/identity.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/fused_op.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::random_tensor;
using testing::RunResult;
using Ops = std::vector<std::shared_ptr<BasicOp>>;

// y = s x with a learnable scalar s.  dx = s dy,  ds = <x, dy>
struct LearnableScaleSaved {
  Tensor input;
};

class LearnableScale : public BasicOp {
 public:
  LearnableScale() : BasicOp("LearnableScale") { add_parameter("scale", full({}, 0.7)); }
  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override {
    if (ctx.requires_backward()) ctx.save<LearnableScaleSaved>().input = x;
    return {math::binary(math::BinaryOp::Mul, x, parameter(0)), {}};
  }
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override {
    const Tensor& x = ctx.saved<LearnableScaleSaved>(describe()).input;
    return {math::binary(math::BinaryOp::Mul, dy, parameter(0)), {},
            {math::sum_to(math::binary(math::BinaryOp::Mul, dy, x), math::Broadcast::Scalar, {})}};
  }
};

TEST(UserOps, CustomBasicOpWithAParameter) {
  auto op = std::make_shared<LearnableScale>();
  Sequential seq({std::make_shared<Identity>(), op, std::make_shared<Identity>()});
  const Tensor x = random_tensor({7, 5}, DType::Float32, 1);
  const RunResult run = testing::run_with_backward(seq, x, {});
  // Reference with the functional API.
  Tensor xr = x.clone(), sr = full({}, 0.7);
  xr.set_requires_grad(true);
  sr.set_requires_grad(true);
  const Tensor y = mul(xr, sr);
  backward(sum(mul(y, random_tensor(y.shape(), y.dtype(), 99))));
  testing::expect_runs_match(run, RunResult{{y}, {xr.grad()}, {sr.grad()}}, 1e-6, 1e-6);
}

// Forward-only: out = s x + extra over (ConstantScale, AddExtraInput); backward runs unfused.
class ForwardAxpy : public FusedOp {
 public:
  explicit ForwardAxpy(const OpList& ops) : FusedOp("ForwardAxpy", ops, Pass::Forward) {}
  FusedForward fuser_forward(const std::vector<OpContext*>&, const Tensor& x, const TensorLists& extra) override {
    ++calls;
    Tensor out = extra[1][0].clone();
    math::add_(out, x, op<ConstantScale>(0).scale());
    return {out, TensorLists(2)};
  }
  static inline int calls = 0;
};

OpList fuse_axpy(OpList ops, const FusionFacts&) { return fuse_pairs<ConstantScale, AddExtraInput, ForwardAxpy>(ops); }

TEST(UserFusions, ForwardOnlyFusedOpWithUnfusedBackward) {
  ScopedFusion fusion(register_forward_fusion("axpy", fuse_axpy));
  Sequential seq({std::make_shared<ConstantScale>(0.5), std::make_shared<AddExtraInput>()});
  EXPECT_EQ(seq.describe(),
            "forward: [ForwardAxpy(constantscale0, addextrainput0)]\n"
            "backward: [ConstantScale(constantscale0), AddExtraInput(addextrainput0)]");
  const Tensor x1 = random_tensor({4, 3}, DType::Float32, 1), x2 = random_tensor({4, 3}, DType::Float32, 2);
  ForwardAxpy::calls = 0;
  testing::expect_fused_matches_unfused(seq, x1, {x2}, 1e-6, 1e-6);
  EXPECT_EQ(ForwardAxpy::calls, 1);  // the fused run only
}

// Forward-only, filling the contexts that the unfused Linear and SiLU backward read.
class CustomForwardLinearSiLU : public FusedOp {
 public:
  explicit CustomForwardLinearSiLU(const OpList& ops) : FusedOp("CustomForwardLinearSiLU", ops, Pass::Forward) {}
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x, const TensorLists&) override {
    Linear& linear = op<Linear>(0);
    const Tensor pre = math::matmul(x, false, linear.weight(), true);
    Linear::save_for_backward(*ctxs[0], x, linear.weight());
    ActivationOp::save_for_backward(*ctxs[1], pre);
    return {math::activation(Activation::SiLU, pre), TensorLists(2)};
  }
};

TEST(UserFusions, ForwardFusedOpFillsTheContextsTheUnfusedBackwardReads) {
  ScopedFusion fusion(register_forward_fusion("linear_silu", [](OpList ops, const FusionFacts&) {
    return fuse_pairs<Linear, SiLU, CustomForwardLinearSiLU>(ops);
  }));
  Sequential seq({std::make_shared<Linear>(11, 11), std::make_shared<SiLU>()});
  ASSERT_EQ(seq.fused_lists()->forward.ops.size(), 1u);
  EXPECT_NE(seq.describe().find("CustomForwardLinearSiLU(linear0, silu0)"), std::string::npos);
  const Tensor x = random_tensor({6, 11}, DType::Float32, 3);
  testing::expect_fused_matches_unfused(seq, x, {}, 1e-6, 1e-6);
}

// Backward-only over (MakeExtraOutput, Linear), reading the unfused forward's LinearSaved, and
// registered with prepend so that it wins over the built-in BackwardLinearAdd.
class CustomBackwardLinearAdd : public FusedOp {
 public:
  explicit CustomBackwardLinearAdd(const OpList& ops) : FusedOp("CustomBackwardLinearAdd", ops, Pass::Backward) {}
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                               const TensorLists& grad_extra_outputs) override {
    const LinearSaved& saved = ctxs[1]->saved<LinearSaved>("CustomBackwardLinearAdd");
    Tensor dx = Linear::input_grad(dy, saved.weight, saved.input.shape());
    if (grad_extra_outputs[0][0].defined()) math::add_(dx, grad_extra_outputs[0][0]);  // undefined: zero
    return {dx, TensorLists(2), {{}, {Linear::weight_grad(dy, saved.input)}}};
  }
};

TEST(UserFusions, BackwardFusedOpPrependedWinsOverTheBuiltin) {
  Sequential seq({std::make_shared<MakeExtraOutput>(), std::make_shared<Linear>(5, 5)});
  EXPECT_NE(seq.describe().find("backward: [BackwardLinearAdd(makeextraoutput0, linear0)]"), std::string::npos);
  ScopedFusion fusion(register_backward_fusion(
      "custom_linear_add",
      [](OpList ops, const FusionFacts&) { return fuse_pairs<MakeExtraOutput, Linear, CustomBackwardLinearAdd>(ops); },
      /*prepend=*/true));
  EXPECT_NE(seq.describe().find("backward: [CustomBackwardLinearAdd(makeextraoutput0, linear0)]"), std::string::npos)
      << seq.describe();
  const Tensor x = random_tensor({13, 5}, DType::Float32, 4);
  testing::expect_fused_matches_unfused(seq, x, {}, 1e-6, 1e-6);
}

// Joint: forward saves only (x, W) for the Linear and nothing for the SiLU; backward recomputes
// the pre-activation. The same object sits in both lists.
class CustomLinearSiLU : public FusedOp {
 public:
  explicit CustomLinearSiLU(const OpList& ops)
      : FusedOp("CustomLinearSiLU", ops, Pass::ForwardBackward) {}
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x, const TensorLists&) override {
    Linear& linear = op<Linear>(0);
    Linear::save_for_backward(*ctxs[0], x, linear.weight());
    return {math::activation(Activation::SiLU, math::matmul(x, false, linear.weight(), true)), TensorLists(2)};
  }
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy, const TensorLists&) override {
    EXPECT_FALSE(ctxs[1]->has_saved_state());
    const LinearSaved& saved = ctxs[0]->saved<LinearSaved>("CustomLinearSiLU");
    const Tensor pre = math::matmul(saved.input, false, saved.weight, true);
    const Tensor dpre = math::activation_backward(Activation::SiLU, pre, dy);
    return {Linear::input_grad(dpre, saved.weight, saved.input.shape()), TensorLists(2),
            {{Linear::weight_grad(dpre, saved.input)}, {}}};
  }
};

TEST(UserFusions, JointFusedOpIsTheSameObjectInBothLists) {
  ScopedFusion fusion(register_forward_backward_fusion("joint_linear_silu", [](OpList ops, const FusionFacts&) {
    return fuse_pairs<Linear, SiLU, CustomLinearSiLU>(ops);
  }));
  Sequential seq({std::make_shared<Linear>(11, 11), std::make_shared<SiLU>()});
  const auto lists = seq.fused_lists();
  ASSERT_EQ(lists->forward.ops.size(), 1u);
  ASSERT_EQ(lists->backward.ops.size(), 1u);
  EXPECT_EQ(lists->forward.ops[0], lists->backward.ops[0]);
  const Tensor x = random_tensor({9, 11}, DType::Float32, 5);
  testing::expect_fused_matches_unfused(seq, x, {}, 1e-6, 1e-6);
}

TEST(UserFusions, RegisteredAfterFirstUseAppliesOnTheNextCallAndUnregisterRestores) {
  Sequential seq({std::make_shared<ConstantScale>(2.0), std::make_shared<AddExtraInput>()});
  const Tensor x = ones({2, 2}), e = ones({2, 2});
  seq(x, {e});
  const std::string before = seq.describe();
  EXPECT_EQ(before.find("ForwardAxpy"), std::string::npos);
  FusionHandle handle = register_forward_fusion("axpy", fuse_axpy);
  ForwardAxpy::calls = 0;
  EXPECT_EQ(seq(x, {e}).output.to_vector<float>(), std::vector<float>(4, 3.0f));
  EXPECT_EQ(ForwardAxpy::calls, 1);
  handle.unregister();
  seq(x, {e});
  EXPECT_EQ(ForwardAxpy::calls, 1);
  EXPECT_EQ(seq.describe(), before);
  handle.unregister();  // a second time is harmless
}

TEST(UserFusions, PrependRunsLastRegisteredFirst) {
  std::vector<std::string> order;
  auto recorder = [&order](std::string name) {
    return [&order, name](OpList ops, const FusionFacts&) {
      order.push_back(name);
      return ops;
    };
  };
  ScopedFusion a(register_forward_fusion("a", recorder("a"), true));
  ScopedFusion b(register_forward_fusion("b", recorder("b"), true));
  ScopedFusion c(register_forward_fusion("c", recorder("c")));
  Sequential seq({std::make_shared<Identity>()});
  seq.describe();
  EXPECT_EQ(order, (std::vector<std::string>{"b", "a", "c"}));
}

TEST(UserFusions, AFusionThatNeverMatchesLeavesTheListUnchanged) {
  Sequential seq({std::make_shared<Linear>(3, 3), std::make_shared<GELU>(), std::make_shared<Identity>()});
  const std::string before = seq.describe();
  ScopedFusion never(register_forward_fusion("never", [](OpList ops, const FusionFacts&) {
    return fuse_window(ops, 3, [](const BasicOpWindow&) { return std::optional<WindowMatch>(); });
  }));
  EXPECT_EQ(seq.describe(), before);
}

TEST(UserFusions, FusionFunctionsSeeTheFacts) {
  std::vector<FusionFacts> seen;
  ScopedFusion spy(register_forward_fusion("spy", [&seen](OpList ops, const FusionFacts& facts) {
    seen.push_back(facts);
    return ops;
  }));
  Sequential seq({std::make_shared<Linear>(2, 2)});
  seq.to(DType::Float64).eval();
  {
    NoGradGuard no_grad;
    seq(zeros({1, 2}, DType::Float64));
  }
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().dtype, DType::Float64);
  EXPECT_FALSE(seen.back().training);
  EXPECT_FALSE(seen.back().grad_enabled);
  EXPECT_TRUE(seen.back().device.is_cpu());
  const size_t fusions = seen.size();
  seq(zeros({1, 2}, DType::Float64));  // grad mode differs: fused again
  EXPECT_EQ(seen.size(), fusions + 1);
  seq(zeros({1, 2}, DType::Float64));  // cached
  EXPECT_EQ(seen.size(), fusions + 1);
}

}  // namespace
}  // namespace fuselab
