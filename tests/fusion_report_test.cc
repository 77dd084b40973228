// The fusion report and picture of a Sequential: report_fusions measures exactly the fusions that
// fire, each alone against fusion off, and leaves the Sequential as it was; to_dot labels each
// context edge with what the context held after a call, and draws Modules and channels.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "autograd/functional.h"
#include "fuser/fusion_picture.h"
#include "fuser/fusion_report.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/bias.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/fused_op.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"
#include "tests/expect_error.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::random_tensor;

// Linear, Bias, GELU, Linear, Bias, then x added back as the call's extra input: the MLP block of
// the benchmarks, without its norm.
Sequential mlp_with_residual() {
  return Sequential({std::make_shared<Linear>(8, 32), std::make_shared<Bias>(32), std::make_shared<GELU>(),
                     std::make_shared<Linear>(32, 8), std::make_shared<Bias>(8), std::make_shared<AddExtraInput>()});
}

Tensor sum_of_squares(const SequentialOutput& out) { return sum(mul(out.output, out.output)); }

// The types of the fused ops in a Sequential's two lists.
std::set<std::string> fused_types(Sequential& seq) {
  std::set<std::string> types;
  const auto lists = seq.fused_lists();
  for (const auto* list : {&lists->forward.ops, &lists->backward.ops}) {
    for (const auto& op : *list) {
      if (op->is_fused()) types.insert(static_cast<const FusedOp&>(*op).type());
    }
  }
  return types;
}

TEST(FusionReport, MeasuresEachFusionThatFiresAloneAgainstFusionOff) {
  Sequential seq = mlp_with_residual();
  const Tensor x = random_tensor({16, 8}, DType::Float32, 1);
  const FusionSwitches before = seq.fusion_switches();
  const std::set<std::string> firing = fused_types(seq);
  ASSERT_TRUE(firing.count("ForwardLinearBiasActivation")) << seq.describe();

  const FusionReport report = report_fusions(seq, x, {x}, sum_of_squares, {/*warmup=*/1, /*iters=*/3});
  EXPECT_EQ(report.all_fusions, seq.describe());
  std::set<std::string> reported;
  for (const FusionMeasurement& m : report.fusions) {
    SCOPED_TRACE(m.fusion);
    reported.insert(m.fusion);
    ASSERT_FALSE(m.fused_entries.empty());
    EXPECT_EQ(m.fused_entries[0].rfind(m.fusion + "(", 0), 0u) << m.fused_entries[0];
    EXPECT_GT(m.alone_ms.median, 0);
    EXPECT_LE(m.alone_ms.min, m.alone_ms.median);
    EXPECT_LE(m.alone_ms.median, m.alone_ms.max);
    // The off run saves at least the first Linear's input and weight for backward.
    EXPECT_GE(m.off_held_bytes, (16 * 8 + 32 * 8) * sizeof(float));
    EXPECT_GT(m.alone_held_bytes, 0u);
    EXPECT_GT(m.off_launches, 0u);
    EXPECT_LE(m.alone_launches, m.off_launches);
  }
  EXPECT_EQ(reported, firing);  // those that fire, and only those

  // Linear, Bias and GELU in one GEMM with post-ops: fewer launches than three kernels.
  for (const FusionMeasurement& m : report.fusions) {
    if (m.fusion == "ForwardLinearBiasActivation") {
      EXPECT_LT(m.alone_launches, m.off_launches);
    }
  }
  EXPECT_EQ(seq.fusion_switches(), before);
  EXPECT_EQ(fused_types(seq), firing);
}

TEST(FusionReport, LeavesOutFusionsTheSequentialSwitchesOff) {
  Sequential seq = mlp_with_residual();
  const FusionSwitches switches = FusionSwitches().with("ForwardLinearBiasActivation", false);
  seq.set_fusion_switches(switches);
  const Tensor x = random_tensor({4, 8}, DType::Float32, 2);
  const FusionReport report = report_fusions(seq, x, {x}, sum_of_squares, {0, 1});
  for (const FusionMeasurement& m : report.fusions) EXPECT_NE(m.fusion, "ForwardLinearBiasActivation");
  EXPECT_FALSE(report.fusions.empty());
  EXPECT_EQ(seq.fusion_switches(), switches);
}

TEST(FusionReport, ALossThatIsNotAScalarIsAnError) {
  Sequential seq = mlp_with_residual();
  const Tensor x = random_tensor({4, 8}, DType::Float32, 3);
  testing::expect_error(
      [&] { report_fusions(seq, x, {x}, [](const SequentialOutput& out) { return out.output; }, {0, 1}); },
      {"report_fusions", "the loss must be a scalar", "[4, 8]"});
}

TEST(FusionReport, LaunchCountCountsEachKernelLaunch) {
  const Tensor a = random_tensor({4, 4}, DType::Float32, 4);
  const uint64_t before = launch_count();
  const Tensor b = math::matmul(a, false, a, true);
  EXPECT_GT(launch_count(), before);
}

// The dashed edges, one a line: "f0:b0:s -> b0:b0:n [style=dashed, label=<...>];".
std::vector<std::string> context_edges(const std::string& dot) {
  std::vector<std::string> edges;
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("style=dashed") != std::string::npos) edges.push_back(line);
  }
  return edges;
}

TEST(FusionPicture, ContextEdgesSayWhatTheContextHeldAfterACall) {
  auto relu_module = std::make_shared<Module>("ReLU", [](const Tensor& x) { return relu(x); });
  Sequential seq({std::make_shared<Linear>(4, 8), std::make_shared<Bias>(8), relu_module,
                  std::make_shared<Linear>(8, 4), std::make_shared<Bias>(4)});

  // Before any call, each edge names its op.
  std::vector<std::string> edges = context_edges(to_dot(seq));
  ASSERT_EQ(edges.size(), seq.ops().size());
  EXPECT_NE(edges[0].find("label=<linear0>"), std::string::npos) << edges[0];

  Tensor x = random_tensor({3, 4}, DType::Float32, 5);
  x.set_requires_grad(true);
  const Tensor y = seq(x);
  const std::string dot = to_dot(seq);
  SCOPED_TRACE(dot);
  edges = context_edges(dot);
  ASSERT_EQ(edges.size(), seq.ops().size());
  // linear0 saved x [3, 4] and its weight [8, 4], in float32: 48 + 128 bytes.
  EXPECT_NE(edges[0].find("input, weight<br/>176 B"), std::string::npos) << edges[0];
  EXPECT_NE(edges[1].find("nothing saved"), std::string::npos) << edges[1];  // a bias grad needs no state

  // The Module in place in both rows, between the two groups.
  EXPECT_NE(dot.find("fm0 [label=<"), std::string::npos);
  EXPECT_NE(dot.find("bm0 [label=<"), std::string::npos);
  EXPECT_NE(dot.find("<b>ReLU</b></td></tr><tr><td>relu0</td>"), std::string::npos);
  EXPECT_NE(dot.find("fm0 -> bm0"), std::string::npos);
  backward(sum(y));
}

TEST(FusionPicture, ChannelsAndExtraInputsAreNodes) {
  auto branch = std::make_shared<MakeExtraOutput>();
  branch->set_extra_output_channel(0, "residual", /*to_caller=*/false);
  auto add = std::make_shared<AddExtraInput>();
  add->set_extra_input_channel(0, "residual");
  Sequential seq({branch, std::make_shared<Linear>(4, 4), add, std::make_shared<AddExtraInput>()});
  const std::string dot = to_dot(seq);
  SCOPED_TRACE(dot);
  EXPECT_NE(dot.find("ch0_0 [label=<<i>channel residual</i>>"), std::string::npos);
  EXPECT_NE(dot.find("in0 [label=<<i>extra input 0</i>>"), std::string::npos);
  // From its producer (the arrow reversed, to keep the channel above the row) to its reader.
  EXPECT_NE(dot.find("ch0_0 -> f0:b0:n [color=darkgreen, dir=back]"), std::string::npos);
  EXPECT_NE(dot.find(":b2:n [color=darkgreen]"), std::string::npos);
  EXPECT_NE(dot.find("in0 -> "), std::string::npos);
}

}  // namespace
}  // namespace fuselab
