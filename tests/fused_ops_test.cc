// Each built-in fusion: it fires in the right pass (describe()), and the fused run agrees with the
// unfused run on the output and every grad, in float64 and float32, in train and eval, with and
// without the input requiring grad, and with some parameters frozen.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/bias.h"
#include "ops/basic/gated_linear_unit.h"
#include "ops/basic/layernorm.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "tensor/allocator.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::random_tensor;
using Ops = std::vector<std::shared_ptr<BasicOp>>;

struct FusionCase {
  std::string name;
  std::function<Ops(int64_t hidden)> build;
  int num_extra_inputs;
  std::string forward;   // expected in describe()'s forward line ("" = no forward fusion)
  std::string backward;  // expected in the backward line
};

std::vector<FusionCase> cases() {
  return {
      {"LinearBiasGELU", [](int64_t h) { return Ops{std::make_shared<Linear>(h, 2 * h), std::make_shared<Bias>(2 * h, 0.5), std::make_shared<GELU>()}; },
       0, "ForwardLinearBiasActivation(linear0, bias0, gelu0)", "BackwardActivationBias(bias0, gelu0)"},
      {"LinearBiasReLU", [](int64_t h) { return Ops{std::make_shared<Linear>(h, h), std::make_shared<Bias>(h, 0.5), std::make_shared<ReLU>()}; },
       0, "ForwardLinearBiasActivation(linear0, bias0, relu0)", "BackwardActivationBias(bias0, relu0)"},
      {"LinearBiasSiLU", [](int64_t h) { return Ops{std::make_shared<Linear>(h, h), std::make_shared<Bias>(h, 0.5), std::make_shared<SiLU>()}; },
       0, "ForwardLinearBiasActivation(linear0, bias0, silu0)", "BackwardActivationBias(bias0, silu0)"},
      {"LinearBias", [](int64_t h) { return Ops{std::make_shared<Linear>(h, h + 1), std::make_shared<Bias>(h + 1, 0.5)}; },
       0, "ForwardLinearBiasActivation(linear0, bias0)", ""},
      // 64h outputs: 300 rows take three of the CPU kernel's row panels in float64, the last one short.
      {"LinearSwiGLU", [](int64_t h) { return Ops{std::make_shared<Linear>(h, 64 * h), std::make_shared<SwiGLU>()}; },
       0, "ForwardLinearGatedLinearUnit(linear0, swiglu0)", ""},
      {"LinearBiasGEGLU", [](int64_t h) { return Ops{std::make_shared<Linear>(h, 2 * h), std::make_shared<Bias>(2 * h, 0.5), std::make_shared<GEGLU>()}; },
       0, "ForwardLinearGatedLinearUnit(linear0, bias0, geglu0)", ""},
      {"LinearBiasAdd", [](int64_t h) { return Ops{std::make_shared<Linear>(h, h), std::make_shared<Bias>(h, 0.5), std::make_shared<AddExtraInput>()}; },
       1, "ForwardLinearBiasAdd(linear0, bias0, addextrainput0)", ""},
      {"LinearAdd", [](int64_t h) { return Ops{std::make_shared<Linear>(h, h), std::make_shared<AddExtraInput>()}; },
       1, "ForwardLinearBiasAdd(linear0, addextrainput0)", ""},
      {"BranchLinear", [](int64_t h) { return Ops{std::make_shared<MakeExtraOutput>(), std::make_shared<Linear>(h, h)}; },
       0, "", "BackwardLinearAdd(makeextraoutput0, linear0)"},
      {"AddRMSNorm", [](int64_t h) { return Ops{std::make_shared<AddExtraInput>(), std::make_shared<MakeExtraOutput>(), std::make_shared<RMSNorm>(h)}; },
       1, "ForwardAddNorm(addextrainput0, makeextraoutput0, rmsnorm0)", "BackwardAddNorm(makeextraoutput0, rmsnorm0)"},
      {"AddLayerNorm", [](int64_t h) { return Ops{std::make_shared<AddExtraInput>(), std::make_shared<MakeExtraOutput>(), std::make_shared<LayerNorm>(h)}; },
       1, "ForwardAddNorm(addextrainput0, makeextraoutput0, layernorm0)", "BackwardAddNorm(makeextraoutput0, layernorm0)"},
  };
}

class BuiltinFusion : public ::testing::TestWithParam<FusionCase> {};

std::vector<Tensor> extras_for(const FusionCase& c, const Shape& shape, DType dtype) {
  std::vector<Tensor> extras;
  for (int k = 0; k < c.num_extra_inputs; ++k) extras.push_back(random_tensor(shape, dtype, 200 + k));
  return extras;
}

// The output shape of the case's ops on [rows, hidden], for the extra inputs that add into it.
Shape output_shape(const FusionCase& c, int64_t rows, int64_t hidden) {
  Sequential probe(c.build(hidden));
  probe.set_fusion_switches(false);
  NoGradGuard no_grad;
  const Tensor x = random_tensor({rows, hidden}, DType::Float32, 1);
  return probe(x, extras_for(c, {rows, hidden}, DType::Float32)).output.shape();
}

TEST_P(BuiltinFusion, FiresInItsPass) {
  const FusionCase& c = GetParam();
  Sequential seq(c.build(8));
  const std::string text = seq.describe();
  const std::string forward = text.substr(0, text.find('\n')), backward = text.substr(text.find('\n'));
  if (!c.forward.empty()) {
    EXPECT_NE(forward.find(c.forward), std::string::npos) << text;
  }
  if (!c.backward.empty()) {
    EXPECT_NE(backward.find(c.backward), std::string::npos) << text;
  }
  seq.set_fusion_switches(false);
  EXPECT_EQ(seq.describe().find("Forward"), std::string::npos);
  EXPECT_EQ(seq.describe().find("Backward"), std::string::npos);
}

TEST_P(BuiltinFusion, FusedMatchesUnfusedOnOutputsAndEveryGrad) {
  const FusionCase& c = GetParam();
  struct Setting {
    DType dtype;
    double rtol, atol;
  };
  for (const Setting& s : {Setting{DType::Float64, 1e-10, 1e-12}, Setting{DType::Float32, 1e-5, 1e-5}}) {
    for (const auto& [rows, hidden] : std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {7, 5}, {300, 17}}) {
      for (bool training : {true, false}) {
        for (bool input_grad : {true, false}) {
          for (bool freeze_first : {false, true}) {
            SCOPED_TRACE(c.name + " " + dtype_name(s.dtype) + " rows " + std::to_string(rows) + " hidden " +
                         std::to_string(hidden) + (training ? " train" : " eval") +
                         (input_grad ? " input-grad" : "") + (freeze_first ? " first-param-frozen" : ""));
            Sequential seq(c.build(hidden));
            seq.to(s.dtype).train(training);
            auto params = seq.parameters();
            if (freeze_first && !params.empty()) params[0].set_requires_grad(false);
            const Tensor x = random_tensor({rows, hidden}, s.dtype, 11);
            const auto extras = extras_for(c, output_shape(c, rows, hidden), s.dtype);
            testing::RunOptions options;
            options.input_requires_grad = input_grad;
            testing::expect_fused_matches_unfused(seq, x, extras, s.rtol, s.atol, options);
          }
        }
      }
    }
  }
}

TEST_P(BuiltinFusion, FusedGradientsMatchFiniteDifferences) {
  const FusionCase& c = GetParam();
  Sequential seq(c.build(4));
  seq.to(DType::Float64);
  const Tensor x = random_tensor({3, 4}, DType::Float64, 5);
  const auto extras = extras_for(c, output_shape(c, 3, 4), DType::Float64);
  std::string worst;  // the input's, the extra inputs' and every parameter's grads
  EXPECT_LT(sequential_gradient_error(seq, x, extras, &worst), 1e-6) << worst;
}

// Every grad after two backward() calls without zero_grad in between (gradient accumulation over
// micro-batches) in each parameter's grad, fused or not.
std::vector<std::vector<double>> grads_after(Sequential& seq, const std::vector<Tensor>& inputs,
                                             const std::vector<Tensor>& extras) {
  seq.zero_grad();
  for (const Tensor& x : inputs) {
    const Tensor out = seq(x, extras).output;
    backward(out, random_tensor(out.shape(), out.dtype(), 300));
  }
  std::vector<std::vector<double>> grads;
  for (const Tensor& p : seq.parameters()) {
    grads.push_back(p.grad().defined() ? p.grad().to(DType::Float64).to_vector<double>() : std::vector<double>{});
  }
  return grads;
}

// The Linear weight grads that the second micro-batch adds into in place (beta = 1) must come out
// as the sum of the two batches' grads, fused and unfused alike.
TEST_P(BuiltinFusion, GradsAccumulatedOverMicroBatchesAreTheSumOfTheirGrads) {
  const FusionCase& c = GetParam();
  for (const auto& [dtype, tolerance] : {std::pair{DType::Float64, 1e-12}, std::pair{DType::Float32, 1e-5}}) {
    for (bool fused : {true, false}) {
      SCOPED_TRACE(c.name + " " + dtype_name(dtype) + (fused ? " fused" : " unfused"));
      const int64_t rows = 13, hidden = 9;
      Sequential seq(c.build(hidden));
      seq.to(dtype).set_fusion_switches(fused);
      const Tensor a = random_tensor({rows, hidden}, dtype, 21), b = random_tensor({rows, hidden}, dtype, 22);
      const auto extras = extras_for(c, output_shape(c, rows, hidden), dtype);
      const auto both = grads_after(seq, {a, b}, extras), first = grads_after(seq, {a}, extras),
                 second = grads_after(seq, {b}, extras);
      for (size_t p = 0; p < both.size(); ++p) {
        ASSERT_EQ(both[p].size(), first[p].size());
        for (size_t i = 0; i < both[p].size(); ++i) {
          const double want = first[p][i] + second[p][i];
          ASSERT_NEAR(both[p][i], want, tolerance * std::max(1.0, std::abs(want))) << "param " << p << " at " << i;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, BuiltinFusion, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

TEST(BuiltinFusions, MlpBlockFusesBothPasses) {
  // RMSNorm(x + Linear2(GELU(Linear1(x) + b1)) + b2), called with x as its extra input.
  const int64_t h = 6;
  Sequential seq({std::make_shared<Linear>(h, 4 * h), std::make_shared<Bias>(4 * h, 0.3), std::make_shared<GELU>(),
                  std::make_shared<Linear>(4 * h, h), std::make_shared<Bias>(h, 0.3), std::make_shared<AddExtraInput>(),
                  std::make_shared<RMSNorm>(h)});
  EXPECT_EQ(seq.describe(),
            "forward: [ForwardLinearBiasActivation(linear0, bias0, gelu0), ForwardLinearBiasAdd(linear1, bias1, "
            "addextrainput0), RMSNorm(rmsnorm0)]\n"
            "backward: [Linear(linear0), BackwardActivationBias(bias0, gelu0), Linear(linear1), Bias(bias1), "
            "AddExtraInput(addextrainput0), RMSNorm(rmsnorm0)]");
  const Tensor x = random_tensor({33, h}, DType::Float32, 3);
  testing::expect_fused_matches_unfused(seq, x, {x}, 1e-5, 1e-5);
}

// Without a backward to keep it for, ForwardLinearGatedLinearUnit holds one row panel of the
// [rows, 2n] pre-activation at a time (1 MiB on the CPU), where unfused the Linear's whole output
// is live until the SwiGLU has read it: 16 MiB here.
TEST(BuiltinFusions, LinearGatedLinearUnitWithoutBackwardNeverHoldsThePreActivation) {
  const int64_t rows = 2048, in = 64, n = 1024;
  const Tensor x = random_tensor({rows, in}, DType::Float32, 4);
  auto peak_of_forward = [&](bool fused) {
    Sequential seq({std::make_shared<Linear>(in, 2 * n), std::make_shared<SwiGLU>()});
    seq.set_fusion_switches(fused);
    NoGradGuard no_grad;
    CachingAllocator& allocator = CachingAllocator::of(Device::cpu());
    allocator.empty_cache();
    const size_t before = allocator.stats().bytes_in_use;
    allocator.reset_peak();
    const Tensor y = seq(x);
    return allocator.stats().peak_bytes_in_use - before;
  };
  const size_t pre_bytes = size_t(rows) * 2 * n * sizeof(float), y_bytes = pre_bytes / 2;
  const size_t unfused = peak_of_forward(false), fused = peak_of_forward(true);
  EXPECT_GE(unfused, pre_bytes + y_bytes);
  EXPECT_LE(fused, y_bytes + (size_t(1) << 20)) << "unfused " << unfused << " B";
}

// The second micro-batch's weight grad goes into the grad the first left, in place: no new
// tensor, no separate add. A grad the user holds a handle to is theirs: it keeps its value, and
// the sum is a new tensor.
TEST(LinearWeightGrad, AccumulatesInPlaceUnlessTheUserHoldsTheGrad) {
  for (bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused" : "unfused");
    Sequential seq({std::make_shared<MakeExtraOutput>(), std::make_shared<Linear>(5, 4)});  // BackwardLinearAdd
    seq.set_fusion_switches(fused);
    const Tensor a = random_tensor({6, 5}, DType::Float32, 31), b = random_tensor({6, 5}, DType::Float32, 32);
    Tensor weight = seq.parameters()[0];
    backward(sum(seq(a, {}).output));
    const void* first_storage = weight.grad().raw_data();
    backward(sum(seq(b, {}).output));
    EXPECT_EQ(weight.grad().raw_data(), first_storage);

    const Tensor held = weight.grad();
    const std::vector<float> held_before = held.to_vector<float>();
    backward(sum(seq(a, {}).output));
    EXPECT_NE(weight.grad().raw_data(), held.raw_data());
    EXPECT_EQ(held.to_vector<float>(), held_before);
  }
}

}  // namespace
}  // namespace fuselab
