// The fusion lab: check_fusion catching wrong fusions, the explain log, per-fusion switches, the
// bisect helper and declarative patterns. Every registered fusion is checked on its example model,
// on every device, by the op-case harness (op_cases_test.cc).
#include <gtest/gtest.h>

#include "autograd/functional.h"
#include "fuser/bisect.h"
#include "ops/fusion_pattern.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/bias.h"
#include "ops/basic/constant_scale.h"
#include "ops/basic/identity.h"
#include "ops/basic/linear.h"
#include "ops/fused_op.h"
#include "tensor/factories.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::random_tensor;

// Claims to fuse Identity pairs but doubles the output: check_fusion must catch it.
class WrongDouble : public FusedOp {
 public:
  explicit WrongDouble(const OpList& ops) : FusedOp("WrongDouble", ops, Pass::Forward) {}
  FusedForward fuser_forward(const std::vector<OpContext*>&, const Tensor& x, const TensorLists&) override {
    return {math::scaled(x, 2.0), TensorLists(2)};
  }
};

// A backward fusion that reads state the unfused forward never saves.
class ReadsMissingState : public FusedOp {
 public:
  explicit ReadsMissingState(const OpList& ops) : FusedOp("ReadsMissingState", ops, Pass::Backward) {}
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor&, const TensorLists&) override {
    ctxs[0]->saved<ActivationSaved>("ReadsMissingState");
    return {};
  }
};

TEST(FusionLab, CheckFusionCatchesWrongResultsAndBrokenContracts) {
  ScopedFusion wrong(register_forward_fusion("wrong_double", [](OpList ops, const FusionFacts&) {
    return fuse_pairs<Identity, Identity, WrongDouble>(ops);
  }));
  Sequential seq({std::make_shared<Identity>(), std::make_shared<Identity>()});
  const FusionCheckResult bad = check_fusion("wrong_double", seq, random_tensor({3, 2}, DType::Float64, 1));
  EXPECT_TRUE(bad.fired);
  EXPECT_FALSE(bad.ok);

  ScopedFusion missing(register_backward_fusion("reads_missing_state", [](OpList ops, const FusionFacts&) {
    return fuse_pairs<Identity, ConstantScale, ReadsMissingState>(ops);
  }));
  Sequential seq2({std::make_shared<Identity>(), std::make_shared<ConstantScale>(2)});
  const FusionCheckResult broken = check_fusion("reads_missing_state", seq2, random_tensor({3, 2}, DType::Float32, 2));
  EXPECT_FALSE(broken.ok);
  EXPECT_NE(broken.problem.find("no saved state"), std::string::npos) << broken.problem;

  // The GoogleTest helper on a fusion that is right.
  Sequential good({std::make_shared<Linear>(6, 6), std::make_shared<Bias>(6, 0.5), std::make_shared<ReLU>()});
  testing::expect_fusion_equivalent("ForwardLinearBiasActivation", good, random_tensor({9, 6}, DType::Float32, 4));

  Sequential plain({std::make_shared<Identity>()});
  const FusionCheckResult silent = check_fusion("wrong_double", plain, random_tensor({3, 2}, DType::Float32, 3));
  EXPECT_FALSE(silent.fired);
  EXPECT_NE(silent.problem.find("did not fire"), std::string::npos);
}

TEST(FusionLab, ExplainListsMatchesAndRejectionsWithReasons) {
  // bias1 does not fit linear1 (7 vs 5 features); the unfused run would fail, but explain only fuses.
  Sequential seq({std::make_shared<Linear>(4, 4), std::make_shared<Bias>(4), std::make_shared<GELU>(),
                  std::make_shared<Linear>(4, 5), std::make_shared<Bias>(7)});
  const std::string text = seq.explain();
  EXPECT_NE(text.find("forward pass:"), std::string::npos) << text;
  EXPECT_NE(text.find("ForwardLinearBiasAdd: no match"), std::string::npos) << text;
  EXPECT_NE(text.find("matched  linear0, bias0, gelu0 -> ForwardLinearBiasActivation(linear0, bias0, gelu0)"),
            std::string::npos) << text;
  EXPECT_NE(text.find("rejected linear1, bias1 -> bias fits the linear: Bias(bias1) has 7 features, "
                      "Linear(linear1) gives 5"), std::string::npos) << text;
  EXPECT_NE(text.find("backward pass:"), std::string::npos) << text;
  EXPECT_NE(text.find("matched  bias0, gelu0 -> BackwardActivationBias(bias0, gelu0)"), std::string::npos) << text;
  // Order: the priority order of the registry.
  EXPECT_LT(text.find("ForwardLinearBiasAdd"), text.find("ForwardLinearBiasActivation")) << text;
}

// The backward twin of the order check above: the built-in backward fusions in priority order.
TEST(FusionLab, BuiltinBackwardFusionsRunInPriorityOrder) {
  std::vector<std::string> builtin;
  for (const RegisteredFusion& f : fusion_snapshot().backward) {
    if (f.name.rfind("Backward", 0) == 0) builtin.push_back(f.name);
  }
  EXPECT_EQ(builtin, (std::vector<std::string>{"BackwardLinearAdd", "BackwardLinearScale", "BackwardActivationBias",
                                                "BackwardAddNorm"}));

  Sequential seq({std::make_shared<Linear>(4, 4), std::make_shared<Bias>(4), std::make_shared<GELU>()});
  const std::string text = seq.explain();
  const size_t backward = text.find("backward pass:");
  ASSERT_NE(backward, std::string::npos) << text;
  const size_t linear_add = text.find("BackwardLinearAdd", backward);
  const size_t activation_bias = text.find("BackwardActivationBias", backward);
  const size_t add_norm = text.find("BackwardAddNorm", backward);
  ASSERT_NE(add_norm, std::string::npos) << text;
  EXPECT_LT(linear_add, activation_bias) << text;
  EXPECT_LT(activation_bias, add_norm) << text;
}

TEST(FusionLab, ExplainLogsHandWrittenFusionsFromWhatTheyCreated) {
  ScopedFusion fusion(register_forward_fusion("double_identity", [](OpList ops, const FusionFacts&) {
    return fuse_pairs<Identity, Identity, WrongDouble>(ops);
  }));
  Sequential seq({std::make_shared<Identity>(), std::make_shared<Identity>()});
  const std::string text = seq.explain();
  EXPECT_NE(text.find("double_identity\n    matched  identity0, identity1 -> WrongDouble(identity0, identity1)"),
            std::string::npos) << text;
}

TEST(FusionLab, PerFusionSwitchesPerSequentialAndGlobal) {
  Sequential seq({std::make_shared<Linear>(3, 3), std::make_shared<Bias>(3), std::make_shared<GELU>()});
  const std::string fused = seq.describe();
  EXPECT_NE(fused.find("ForwardLinearBiasActivation"), std::string::npos);
  EXPECT_NE(fused.find("BackwardActivationBias"), std::string::npos);
  seq.set_fusion_switches(seq.fusion_switches().with("ForwardLinearBiasActivation", false));
  EXPECT_EQ(seq.describe().find("ForwardLinearBiasActivation"), std::string::npos);
  EXPECT_NE(seq.describe().find("BackwardActivationBias"), std::string::npos);
  EXPECT_NE(seq.explain().find("ForwardLinearBiasActivation: disabled"), std::string::npos);
  seq.set_fusion_switches(seq.fusion_switches().with("ForwardLinearBiasActivation", true));
  EXPECT_EQ(seq.describe(), fused);
  EXPECT_EQ(seq.explain().find("fusion is off"), std::string::npos);
  seq.set_fusion_switches(false);  // explain still shows the matches, after a line saying they do not run
  EXPECT_EQ(seq.explain().rfind("fusion is off for this Sequential", 0), 0u) << seq.explain();
  seq.set_fusion_switches(true);

  {
    const FusionSwitchesScope global(global_fusion_switches().with("BackwardActivationBias", false));
    EXPECT_EQ(seq.describe().find("BackwardActivationBias"), std::string::npos);
  }
  EXPECT_EQ(seq.describe(), fused);

  {
    const FusionSwitchesScope scope(seq, FusionSwitches::only({"BackwardActivationBias"}));
    EXPECT_EQ(seq.describe().find("ForwardLinearBiasActivation"), std::string::npos);
    EXPECT_NE(seq.describe().find("BackwardActivationBias"), std::string::npos);
  }
  EXPECT_EQ(seq.describe(), fused);
}

// Adds 1e-3 to the output: a fusion that changes the result.
class SlightlyOff : public FusedOp {
 public:
  explicit SlightlyOff(const OpList& ops) : FusedOp("SlightlyOff", ops, Pass::Forward) {}
  FusedForward fuser_forward(const std::vector<OpContext*>&, const Tensor& x, const TensorLists&) override {
    Tensor y = math::scaled(x, 1.0);
    math::add_(y, full(x.shape(), 1e-3, x.dtype()));
    return {y, TensorLists(2)};
  }
};

TEST(FusionLab, BisectFindsTheFusionThatChangesTheResult) {
  ScopedFusion off(register_forward_fusion("slightly_off", [](OpList ops, const FusionFacts&) {
    return fuse_pairs<ConstantScale, Identity, SlightlyOff>(ops);
  }));
  Sequential seq({std::make_shared<Linear>(4, 4), std::make_shared<Bias>(4), std::make_shared<GELU>(),
                  std::make_shared<ConstantScale>(1.0), std::make_shared<Identity>()});
  const Tensor x = random_tensor({5, 4}, DType::Float32, 9);
  EXPECT_EQ(bisect_fusions(seq, x, {}, 1e-5), std::optional<std::string>("slightly_off"));
  Sequential clean({std::make_shared<Linear>(4, 4), std::make_shared<Bias>(4), std::make_shared<GELU>()});
  EXPECT_EQ(bisect_fusions(clean, x, {}, 1e-5), std::nullopt);
  EXPECT_NE(seq.describe().find("SlightlyOff"), std::string::npos);  // the Sequential is restored
}

TEST(FusionLab, BisectAndCheckFusionRestoreTheCallersSwitchesExactly) {
  Sequential seq({std::make_shared<Linear>(4, 4), std::make_shared<Bias>(4), std::make_shared<GELU>()});
  seq.set_fusion_switches(FusionSwitches(true, {"BackwardActivationBias", "NotRegistered"}));
  const FusionSwitches before = seq.fusion_switches();
  const std::string lists = seq.describe();
  const Tensor x = random_tensor({5, 4}, DType::Float32, 9);

  bisect_fusions(seq, x, {}, 1e-5);
  EXPECT_EQ(seq.fusion_switches(), before);
  EXPECT_TRUE(check_fusion("ForwardLinearBiasActivation", seq, x).ok);
  EXPECT_EQ(seq.fusion_switches(), before);
  EXPECT_EQ(seq.describe(), lists);

  // Fusion switched off altogether stays off.
  seq.set_fusion_switches(false);
  const FusionSwitches off = seq.fusion_switches();
  check_fusion("ForwardLinearBiasActivation", seq, x);
  EXPECT_EQ(seq.fusion_switches(), off);
  bisect_fusions(seq, x, {}, 1e-5);
  EXPECT_EQ(seq.fusion_switches(), off);

  // Also when a run throws: a [5, 3] input does not fit Linear(4, 4).
  EXPECT_THROW(bisect_fusions(seq, random_tensor({5, 3}, DType::Float32, 9), {}, 1e-5), Error);
  EXPECT_EQ(seq.fusion_switches(), off);
  EXPECT_FALSE(check_fusion("ForwardLinearBiasActivation", seq, random_tensor({5, 3}, DType::Float32, 9)).ok);
  EXPECT_EQ(seq.fusion_switches(), off);
}

struct Doubler : BasicOp {
  Doubler() : BasicOp("Doubler") {}
  OpForward op_forward(OpContext&, const Tensor& x, const std::vector<Tensor>&) override { return {math::scaled(x, 2), {}}; }
  OpBackward op_backward(OpContext&, const Tensor& dy, const std::vector<Tensor>&) override {
    return {math::scaled(dy, 2), {}, {}};
  }
};

TEST(FusionLab, PatternsWithOptionalAndAlternativeSlots) {
  const FusionPattern pattern{{slot<ConstantScale>(), optional_slot<Identity>(), slot<ReLU, Doubler>()},
                              {{"scale is positive", [](const PatternMatch& m, const FusionFacts&) {
                                  return m.get<ConstantScale>(0).scale() > 0 ? "" : std::string("scale <= 0");
                                }}},
                              [](const OpList& ops) { return std::make_shared<WrongDouble>(ops); }};
  EXPECT_EQ(describe_pattern(pattern), "ConstantScale [Identity] ReLU|Doubler");
  const FusionFunction fn = fuse_pattern(pattern);
  auto run = [&](std::vector<std::shared_ptr<BasicOp>> basic) {
    Sequential seq(basic);  // names the ops
    return describe_list(fn(OpList(basic.begin(), basic.end()), FusionFacts{}));
  };
  EXPECT_EQ(run({std::make_shared<ConstantScale>(2), std::make_shared<Identity>(), std::make_shared<ReLU>()}),
            "[WrongDouble(constantscale0, identity0, relu0)]");
  EXPECT_EQ(run({std::make_shared<ConstantScale>(2), std::make_shared<Doubler>()}), "[WrongDouble(constantscale0, doubler0)]");
  EXPECT_EQ(run({std::make_shared<ConstantScale>(-2), std::make_shared<ReLU>()}),
            "[ConstantScale(constantscale0), ReLU(relu0)]");
  EXPECT_EQ(run({std::make_shared<ConstantScale>(2), std::make_shared<GELU>()}),
            "[ConstantScale(constantscale0), GELU(gelu0)]");
  EXPECT_THROW(fuse_pattern({{optional_slot<Identity>()}, {}, [](const OpList& ops) {
                 return std::make_shared<WrongDouble>(ops);
               }}), Error);
}

}  // namespace
}  // namespace fuselab
