// bfloat16: the rounding itself, casts and their grads, models of the ops and fused ops that take
// it (an MLP block, a residual branch, a SwiGLU MLP, a mixture of experts) against the same model
// in float32 (each op alone is in the op-case table, op_cases.cc), float32 master weights in the
// optimizers, checkpoints, and the clear error every other op gives.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/bias.h"
#include "ops/basic/gated_linear_unit.h"
#include "ops/basic/layernorm.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/moe_mlp.h"
#include "ops/basic/rmsnorm.h"
#include "ops/fused/grouped_mlp.h"
#include "optim/adamw.h"
#include "optim/sgd.h"
#include "tensor/factories.h"
#include "tensor/safetensors.h"
#include "tests/expect_error.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint32_t bits_of(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

// The nearest bfloat16 to a finite f by brute force: of the two bfloat16 values around f (f's top
// 16 bits, and one ulp further from zero), the closer in double; on a tie, the even one.
float nearest_bfloat16(float f) {
  const uint32_t down = bits_of(f) & 0xFFFF0000u, up = down + 0x10000u;
  const double d_down = std::abs(double(from_bits(down)) - f), d_up = std::abs(double(from_bits(up)) - f);
  if (d_down != d_up) return from_bits(d_down < d_up ? down : up);
  return from_bits(((down >> 16) & 1u) ? up : down);
}

// The bits of a bfloat16 tensor's elements.
std::vector<uint16_t> bfloat16_bits(const Tensor& t) {
  std::vector<uint16_t> bits;
  for (const bfloat16& v : t.to_vector<bfloat16>()) bits.push_back(v.bits);
  return bits;
}

TEST(BFloat16, RoundsToNearestTiesToEven) {
  EXPECT_EQ(float(bfloat16(1.0f)), 1.0f);
  EXPECT_EQ(float(bfloat16(1.0f + 0x1p-8f)), 1.0f);  // a tie, 1.0 is even
  EXPECT_EQ(float(bfloat16(1.0f + 3 * 0x1p-8f)), 1.0f + 0x1p-6f);          // a tie, rounds up to even
  EXPECT_EQ(float(bfloat16(1.0f + 0x1p-8f + 0x1p-20f)), 1.0f + 0x1p-7f);  // just above the tie
  EXPECT_EQ(float(bfloat16(-2.5f)), -2.5f);
  EXPECT_EQ(float(bfloat16(std::numeric_limits<float>::infinity())), std::numeric_limits<float>::infinity());
  EXPECT_EQ(float(bfloat16(std::numeric_limits<float>::max())), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(float(bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(float(bfloat16(from_bits(0x7F800001u)))));  // a NaN whose payload is in the low bits
  EXPECT_EQ(sizeof(bfloat16), 2u);

  Generator gen(3);
  for (int i = 0; i < 100000; ++i) {
    const float f = float(gen.normal()) * std::ldexp(1.0f, int(gen.uniform() * 60) - 30);
    ASSERT_EQ(float(bfloat16(f)), nearest_bfloat16(f)) << f;
  }
}

TEST(BFloat16, CastsRoundAndPassGradsBack) {
  const Tensor x = testing::random_tensor({4, 5}, DType::Float32, 1);
  const Tensor y = x.to(DType::BFloat16);
  EXPECT_EQ(y.dtype(), DType::BFloat16);
  EXPECT_EQ(y.nbytes(), 40u);
  const auto xs = x.to_vector<float>();
  const auto ys = y.to(DType::Float32).to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(ys[i], nearest_bfloat16(xs[i]));

  // d/dx sum(w * float32(bfloat16(x))) = w, in x's dtype; it passed through the bfloat16 tensor's
  // grad, so it is w rounded to bfloat16.
  Tensor leaf = x.detach().clone();
  leaf.set_requires_grad(true);
  const Tensor w = testing::random_tensor({4, 5}, DType::Float32, 2);
  backward(sum(mul(cast(cast(leaf, DType::BFloat16), DType::Float32), w)));
  ASSERT_EQ(leaf.grad().dtype(), DType::Float32);
  const auto grad = leaf.grad().to_vector<float>(), ws = w.to_vector<float>();
  for (size_t i = 0; i < ws.size(); ++i) EXPECT_EQ(grad[i], nearest_bfloat16(ws[i]));
}

// Tensor::to on the CPU (kernels/cpu/cast.h: parallel spans of a vectorized loop) rounds every
// element as the scalar bfloat16 does, from float32 and from float64, NaN and infinities included,
// and widens exactly.
TEST(BFloat16, TensorCastsRoundAsTheScalar) {
  Generator gen(5);
  std::vector<float> values{0.0f, -0.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::quiet_NaN(), from_bits(0x7F800001u)};
  while (values.size() < 100000) {
    values.push_back(float(gen.normal()) * std::ldexp(1.0f, int(gen.uniform() * 60) - 30));
  }
  const int64_t n = int64_t(values.size());
  const Tensor x = from_vector<float>(values, {n});
  const std::vector<uint16_t> from_float = bfloat16_bits(x.to(DType::BFloat16));
  const std::vector<uint16_t> from_double = bfloat16_bits(x.to(DType::Float64).to(DType::BFloat16));
  const std::vector<float> widened = x.to(DType::BFloat16).to(DType::Float32).to_vector<float>();
  for (int64_t i = 0; i < n; ++i) {
    const bfloat16 want(values[size_t(i)]);
    ASSERT_EQ(from_float[size_t(i)], want.bits) << values[size_t(i)];
    ASSERT_EQ(from_double[size_t(i)], want.bits) << values[size_t(i)];
    ASSERT_EQ(bits_of(widened[size_t(i)]), uint32_t(want.bits) << 16) << values[size_t(i)];
  }
}

TEST(BFloat16, SafetensorsKeepsBF16) {
  const std::string path = ::testing::TempDir() + "/bf16.safetensors";
  const Tensor x = testing::random_tensor({3, 7}, DType::Float32, 4).to(DType::BFloat16);
  save_safetensors(path, {{"x", x}});
  const Tensor back = load_safetensors(path).tensors.at("x");
  ASSERT_EQ(back.dtype(), DType::BFloat16);
  EXPECT_EQ(back.to(DType::Float32).to_vector<float>(), x.to(DType::Float32).to_vector<float>());
  std::filesystem::remove(path);
}

using Ops = std::vector<std::shared_ptr<BasicOp>>;

// RMSNorm(x + Linear2(GELU(Linear1(x) + b1)) + b2) with x as its extra input, then LayerNorm and
// SiLU: the ops and built-in fusions that take bfloat16. (ReLU takes it too, but its kink makes a
// bfloat16 run's grads differ from float32's wherever an input near 0 rounds across it.)
Ops mlp_block(int64_t hidden) {
  Generator gen(7);
  return Ops{std::make_shared<Linear>(hidden, 4 * hidden, &gen),
             std::make_shared<Bias>(4 * hidden, 0.5, &gen),
             std::make_shared<GELU>(),
             std::make_shared<Linear>(4 * hidden, hidden, &gen),
             std::make_shared<Bias>(hidden, 0.5, &gen),
             std::make_shared<AddExtraInput>(),
             std::make_shared<MakeExtraOutput>(),
             std::make_shared<RMSNorm>(hidden),
             std::make_shared<LayerNorm>(hidden),
             std::make_shared<SiLU>()};
}

// The branch of a residual: y = Linear(x) + extra, with x also a public extra output, so that
// backward accumulates into x's grad inside the GEMM (BackwardLinearAdd; ForwardLinearBiasAdd
// without a bias).
Ops branch_block(int64_t hidden) {
  Generator gen(8);
  return Ops{std::make_shared<MakeExtraOutput>(), std::make_shared<Linear>(hidden, hidden, &gen),
             std::make_shared<AddExtraInput>()};
}

// Every output and grad of a bfloat16 run within 3% of the largest element of the same tensor of
// the float32 run.
void expect_close_to_float32(const testing::RunResult& got, const testing::RunResult& want) {
  auto check_all = [](const std::vector<Tensor>& a, const std::vector<Tensor>& b, const char* what) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) {
      ASSERT_EQ(a[k].defined(), b[k].defined()) << what << " " << k;
      if (!a[k].defined()) continue;
      EXPECT_EQ(a[k].dtype(), DType::BFloat16) << what << " " << k;
      const auto av = a[k].to(DType::Float32).to_vector<float>(), bv = b[k].to_vector<float>();
      float scale = 0;
      for (float v : bv) scale = std::max(scale, std::abs(v));
      for (size_t i = 0; i < av.size(); ++i) {
        ASSERT_NEAR(av[i], bv[i], 0.03f * scale) << what << " " << k << " element " << i;
      }
    }
  };
  check_all(got.outputs, want.outputs, "output");
  check_all(got.input_grads, want.input_grads, "input grad");
  check_all(got.param_grads, want.param_grads, "param grad");
}

// A SwiGLU MLP, as a llama block's, with a residual added: ForwardLinearGatedLinearUnit, then
// ForwardLinearBiasAdd without a bias.
Ops glu_block(int64_t hidden) {
  Generator gen(9);
  return Ops{std::make_shared<Linear>(hidden, 4 * hidden, &gen), std::make_shared<SwiGLU>(),
             std::make_shared<Linear>(2 * hidden, hidden, &gen), std::make_shared<AddExtraInput>()};
}

// The model in bfloat16 against the same weights and inputs (rounded to bfloat16 once) in float32.
TEST(BFloat16, OpsAndFusionsMatchFloat32) {
  for (const auto& [name, build] :
       {std::pair{"mlp", mlp_block}, std::pair{"branch", branch_block}, std::pair{"glu", glu_block}}) {
    for (bool fused : {true, false}) {
      for (const auto& [rows, hidden] : std::vector<std::pair<int64_t, int64_t>>{{5, 8}, {300, 17}}) {
        SCOPED_TRACE(std::string(name) + (fused ? " fused" : " unfused") + " rows " + std::to_string(rows));
        Sequential model(build(hidden));
        model.to(DType::BFloat16).set_fusion_switches(fused);
        Sequential reference(build(hidden));
        reference.to(DType::BFloat16).to(DType::Float32).set_fusion_switches(fused);  // the same rounded weights
        if (fused) {
          EXPECT_NE(model.describe().find("Forward"), std::string::npos) << model.describe();
        }
        const Tensor x = testing::random_tensor({rows, hidden}, DType::BFloat16, 9);
        const Tensor residual = testing::random_tensor({rows, hidden}, DType::BFloat16, 10);
        expect_close_to_float32(
            testing::run_with_backward(model, x, {residual}),
            testing::run_with_backward(reference, x.to(DType::Float32), {residual.to(DType::Float32)}));
      }
    }
  }
}

// A mixture of experts' MLP (Router to MoEUnpermute) with the experts fused (RoutedGroupedMlp) and
// not: the router picks from float32 logits in both runs, so the two route alike.
TEST(BFloat16, MixtureOfExpertsMatchesFloat32) {
  for (bool fused : {true, false}) {
    for (const auto& [rows, experts] : std::vector<std::pair<int64_t, int64_t>>{{7, 3}, {300, 8}}) {
      SCOPED_TRACE(std::string(fused ? "fused" : "unfused") + " rows " + std::to_string(rows));
      const MoEMlpConfig config{16, 12, experts, 2};
      Generator gen(11), same(11);
      Sequential model(moe_mlp(config, "moe", gen).ops);
      model.to(DType::BFloat16).set_fusion_switches(fused);
      Sequential reference(moe_mlp(config, "moe", same).ops);
      reference.to(DType::BFloat16).to(DType::Float32).set_fusion_switches(fused);
      EXPECT_EQ(model.describe().find("RoutedGroupedMlp") != std::string::npos, fused) << model.describe();
      const Tensor x = testing::random_tensor({rows, 16}, DType::BFloat16, 12);
      expect_close_to_float32(testing::run_with_backward(model, x, {}),
                              testing::run_with_backward(reference, x.to(DType::Float32), {}));
    }
  }
}

// The experts with the scaled GLU (ScaledGroupedMlp's example: the scale of each expert row from
// the caller), fused and not, against float32 on the same rounded weights and inputs.
TEST(BFloat16, ScaledExpertsMatchFloat32) {
  const FusionDefinition fusion = scaled_grouped_mlp_fusion();
  for (bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused" : "unfused");
    Generator gen(11), same(11);
    const FusionExample e = fusion.example(300, 16, DType::BFloat16, gen);
    const FusionExample r = fusion.example(300, 16, DType::BFloat16, same);
    Sequential model(e.ops), reference(r.ops);
    model.set_fusion_switches(fused);
    reference.to(DType::Float32).set_fusion_switches(fused);
    EXPECT_EQ(model.describe().find(fusion.name) != std::string::npos, fused) << model.describe();
    std::vector<Tensor> extras;
    for (const Tensor& extra : r.extra_inputs) {
      extras.push_back(extra.dtype() == DType::Int64 ? extra : extra.to(DType::Float32));
    }
    expect_close_to_float32(testing::run_with_backward(model, e.input, e.extra_inputs),
                            testing::run_with_backward(reference, r.input.to(DType::Float32), extras));
  }
}

// Steps of lr * grad = 1e-4 are below half a bfloat16 ulp at 1.0 (2^-9): applied to the parameter
// they would round away every time. Through the float32 master they add up.
TEST(BFloat16, OptimizersKeepFloat32MasterWeights) {
  for (bool adamw : {false, true}) {
    auto make = [adamw](const Tensor& w) -> std::unique_ptr<Optimizer> {
      if (adamw) return std::make_unique<AdamW>(std::vector<Tensor>{w}, AdamWOptions{1e-4, 0.9, 0.999, 1e-8, 0.0});
      return std::make_unique<SGD>(std::vector<Tensor>{w}, SGDOptions{1e-4});
    };
    Tensor w = ones({3}, DType::BFloat16);
    w.set_requires_grad(true);
    const std::unique_ptr<Optimizer> opt = make(w);
    for (int step = 0; step < 100; ++step) {
      w.set_grad(ones({3}, DType::BFloat16));
      opt->step();
    }
    // SGD: 1 - 100 * 1e-4; AdamW's normalized step is also lr per step for a constant grad.
    const NamedTensors state = opt->state();
    ASSERT_TRUE(state.count("master.0"));
    const Tensor master = state.at("master.0");
    EXPECT_EQ(master.dtype(), DType::Float32);
    for (float m : master.to_vector<float>()) EXPECT_NEAR(m, 0.99f, 1e-4f) << (adamw ? "AdamW" : "SGD");
    for (float v : w.to(DType::Float32).to_vector<float>()) EXPECT_EQ(v, float(bfloat16(master.to_vector<float>()[0])));
    EXPECT_LT(float(bfloat16(0.99f)), 1.0f);
    // The premise: the same 100 steps applied to a bfloat16 value directly leave it at 1.0.
    bfloat16 plain(1.0f);
    for (int step = 0; step < 100; ++step) plain = bfloat16(float(plain) - 1e-4f);
    EXPECT_EQ(float(plain), 1.0f);

    // A checkpoint restores the master, not the rounded parameter.
    Tensor w2 = w.detach().clone();
    w2.set_requires_grad(true);
    const std::unique_ptr<Optimizer> restored = make(w2);
    restored->load_state(state);
    EXPECT_EQ(restored->state().at("master.0").to_vector<float>(), master.to_vector<float>());
  }
}

// A small regression trained in bfloat16 (AdamW, float32 masters, the loss in float32 through a
// cast) follows the same training in float32.
TEST(BFloat16, TrainingFollowsFloat32) {
  auto train = [](DType dtype, bool optimizer_before_to = false) {
    Sequential model(mlp_block(8));
    std::unique_ptr<AdamW> made_before;
    if (optimizer_before_to) made_before = std::make_unique<AdamW>(model.parameters(), AdamWOptions{3e-3, 0.9, 0.999, 1e-8, 0.0});
    model.to(dtype);
    AdamW made_after(model.parameters(), AdamWOptions{3e-3, 0.9, 0.999, 1e-8, 0.0});
    AdamW& opt = made_before ? *made_before : made_after;
    const Tensor x = testing::random_tensor({64, 8}, DType::Float32, 21);
    const Tensor target = testing::random_tensor({64, 8}, DType::Float32, 22);
    std::vector<double> losses;
    for (int step = 0; step < 60; ++step) {
      opt.zero_grad();
      const Tensor xd = x.to(dtype);
      const Tensor loss = mse(cast(model(xd, {xd}).output, DType::Float32), target);
      backward(loss);
      opt.step();
      losses.push_back(loss.item());
    }
    return losses;
  };
  const std::vector<double> f32 = train(DType::Float32), bf16 = train(DType::BFloat16);
  EXPECT_LT(bf16.back(), 0.7 * bf16.front());  // it learns
  for (size_t s = 0; s < f32.size(); ++s) EXPECT_NEAR(bf16[s], f32[s], 0.05 * f32[0]) << "step " << s;
  // An optimizer made before to() trains the converted parameters, with masters made at its first step.
  EXPECT_EQ(train(DType::BFloat16, /*optimizer_before_to=*/true), bf16);
}

// to() after the optimizer was made: a parameter that became bfloat16 gets a float32 master (the
// updates far below its ulp add up), and one that stopped being bfloat16 drops its master.
TEST(BFloat16, MastersFollowTheParametersDtype) {
  Sequential model({std::make_shared<Bias>(3)});
  Tensor b = model.parameters()[0];
  b.fill_(1);
  SGD opt(model.parameters(), SGDOptions{1e-4});
  model.to(DType::BFloat16);
  for (int step = 0; step < 100; ++step) {
    b.set_grad(ones({3}, DType::BFloat16));
    opt.step();
  }
  ASSERT_TRUE(opt.state().count("master.0"));
  for (float m : opt.state().at("master.0").to_vector<float>()) EXPECT_NEAR(m, 0.99f, 1e-4f);
  for (float v : b.to(DType::Float32).to_vector<float>()) EXPECT_EQ(v, float(bfloat16(0.99f)));

  model.to(DType::Float32);
  EXPECT_EQ(opt.state().count("master.0"), 0u);
  b.set_grad(ones({3}));
  opt.step();
  for (float v : b.to_vector<float>()) EXPECT_FLOAT_EQ(v, float(bfloat16(0.99f)) - 1e-4f);
}

TEST(BFloat16, OpsWithoutBFloat16KernelsSaySo) {
  testing::expect_error([&] { cast(from_vector<int64_t>({1}, {1}), DType::BFloat16); }, {"cast", "int64"});
  Tensor w = ones({2}, DType::BFloat16), v = ones({2}, DType::Float64);
  w.set_requires_grad(true);
  v.set_requires_grad(true);
  testing::expect_error([&] { SGD({w, v}, SGDOptions{}); }, {"optimizer", "bfloat16", "float64"});
}

}  // namespace
}  // namespace fuselab
