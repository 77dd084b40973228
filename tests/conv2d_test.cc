// Conv2d and ChannelBias, and the ForwardConvBiasActivation fusion, on the CPU: the forward
// against a direct convolution loop, every grad against finite differences in float64, the
// fused op against the unfused ops (output and every grad) with float32 convolutions on oneDNN
// and on im2col + OpenBLAS, and bad inputs on both.
#include <gtest/gtest.h>

#include <functional>

#include "fuser/sequential.h"
#include "kernels/cpu/gemm.h"
#include "ops/basic/activation.h"
#include "ops/basic/channel_bias.h"
#include "ops/basic/conv2d.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::random_tensor;
using Ops = std::vector<std::shared_ptr<BasicOp>>;
using kernels::cpu::CpuGemm;

// The two float32 paths: oneDNN's convolution (FUSELAB_CPU_GEMM=onednn) and im2col + GEMM.
const CpuGemm kLibraries[] = {CpuGemm::Onednn, CpuGemm::OpenBlas};

// Runs f with float32 convolutions on the library, restoring the environment's choice after.
template <class F>
void with_library(CpuGemm library, F&& f) {
  kernels::cpu::set_cpu_gemm(library);
  SCOPED_TRACE(library == CpuGemm::Onednn ? "oneDNN" : "OpenBLAS");
  f();
  kernels::cpu::set_cpu_gemm(std::nullopt);
}

struct ConvCase {
  int64_t batch, in_channels, out_channels, height, width, kernel, stride, padding;
};

// Sizes that cover 1x1 kernels, stride 2 with odd images, padding wider than the stride, and a
// kernel as large as the padded image.
const ConvCase kCases[] = {
    {2, 3, 4, 5, 6, 3, 1, 1}, {1, 2, 3, 7, 5, 3, 2, 1}, {3, 4, 2, 4, 4, 1, 1, 0},
    {2, 1, 2, 3, 3, 3, 1, 0}, {1, 2, 2, 5, 5, 2, 2, 2}, {2, 2, 1, 1, 2, 3, 1, 1},
};

// Geometries that run on oneDNN where it is the library: kernels wider than 1x1 over at least 16
// input channels (kernels/cpu/conv2d.cc), here with odd channel counts, stride 2 and batch 1.
const ConvCase kOnednnCases[] = {{2, 17, 6, 5, 7, 3, 2, 1}, {1, 16, 6, 6, 19, 3, 1, 1}, {1, 20, 4, 5, 3, 2, 1, 0}};

std::string name_of(const ConvCase& c) {
  return "N" + std::to_string(c.batch) + " C" + std::to_string(c.in_channels) + " K" + std::to_string(c.out_channels) +
         " " + std::to_string(c.height) + "x" + std::to_string(c.width) + " kernel " + std::to_string(c.kernel) +
         " stride " + std::to_string(c.stride) + " pad " + std::to_string(c.padding);
}

std::shared_ptr<Conv2d> conv_for(const ConvCase& c) {
  return std::make_shared<Conv2d>(c.in_channels, c.out_channels, c.kernel, c.stride, c.padding);
}

Tensor input_for(const ConvCase& c, DType dtype, uint64_t seed = 3) {
  return random_tensor({c.batch, c.in_channels, c.height, c.width}, dtype, seed);
}

// y[n, k, p, q] = sum_{c, r, s} w[k, c, r, s] x[n, c, p*stride - pad + r, q*stride - pad + s], as
// the definition reads, in double.
std::vector<double> direct_convolution(const ConvCase& c, const Tensor& x, const Tensor& w) {
  const auto xv = x.to_vector<double>(), wv = w.to_vector<double>();
  const int64_t out_h = (c.height + 2 * c.padding - c.kernel) / c.stride + 1;
  const int64_t out_w = (c.width + 2 * c.padding - c.kernel) / c.stride + 1;
  std::vector<double> y;
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t k = 0; k < c.out_channels; ++k)
      for (int64_t p = 0; p < out_h; ++p)
        for (int64_t q = 0; q < out_w; ++q) {
          double sum = 0;
          for (int64_t ch = 0; ch < c.in_channels; ++ch)
            for (int64_t r = 0; r < c.kernel; ++r)
              for (int64_t s = 0; s < c.kernel; ++s) {
                const int64_t h = p * c.stride - c.padding + r, wi = q * c.stride - c.padding + s;
                if (h < 0 || h >= c.height || wi < 0 || wi >= c.width) continue;
                sum += wv[((k * c.in_channels + ch) * c.kernel + r) * c.kernel + s] *
                       xv[((n * c.in_channels + ch) * c.height + h) * c.width + wi];
              }
          y.push_back(sum);
        }
  return y;
}

TEST(Conv2d, ForwardMatchesTheDirectConvolution) {
  for (const ConvCase& c : kCases) {
    SCOPED_TRACE(name_of(c));
    auto conv = conv_for(c);
    Sequential seq({conv});
    seq.to(DType::Float64);
    const Tensor x = input_for(c, DType::Float64);
    const Tensor y = seq(x);
    const int64_t out_h = (c.height + 2 * c.padding - c.kernel) / c.stride + 1;
    EXPECT_EQ(y.shape(), (Shape{c.batch, c.out_channels, out_h, (c.width + 2 * c.padding - c.kernel) / c.stride + 1}));
    const auto expected = direct_convolution(c, x, conv->weight());
    const auto actual = y.to_vector<double>();
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], 1e-12) << i;
  }
}

// The grads of a one-op Sequential (input and parameters) against finite differences, float64.
void expect_gradients_match_finite_differences(std::shared_ptr<BasicOp> op, const Tensor& x) {
  Sequential seq({op});
  seq.set_fusion_switches(false).to(DType::Float64);
  std::string worst;
  EXPECT_LT(sequential_gradient_error(seq, x, {}, &worst), 1e-6) << op->describe() << ": " << worst;
}

TEST(Conv2d, GradientsMatchFiniteDifferences) {
  for (const ConvCase& c : kCases) {
    SCOPED_TRACE(name_of(c));
    expect_gradients_match_finite_differences(conv_for(c), input_for(c, DType::Float64));
  }
}

TEST(ChannelBias, AddsPerChannelAndItsGradientsMatchFiniteDifferences) {
  auto bias = std::make_shared<ChannelBias>(3, 0.5);
  Sequential seq({bias});
  seq.to(DType::Float64);
  const Tensor x = random_tensor({2, 3, 4, 5}, DType::Float64, 7);
  const std::vector<double> y = seq(x).to_vector<double>();
  const std::vector<double> xv = x.to_vector<double>(), b = bias->bias().to_vector<double>();
  for (size_t i = 0; i < y.size(); ++i) EXPECT_DOUBLE_EQ(y[i], xv[i] + b[(i / 20) % 3]) << i;
  expect_gradients_match_finite_differences(std::make_shared<ChannelBias>(3, 0.5), x);
  // Any trailing shape: [N, C] alone, and [N, C, L].
  expect_gradients_match_finite_differences(std::make_shared<ChannelBias>(3, 0.5),
                                            random_tensor({4, 3}, DType::Float64, 8));
  expect_gradients_match_finite_differences(std::make_shared<ChannelBias>(3, 0.5),
                                            random_tensor({2, 3, 7}, DType::Float64, 9));
}

// Conv2d, ChannelBias and an optional activation: the fusion's pattern.
Ops conv_block(const ConvCase& c, std::function<std::shared_ptr<BasicOp>()> activation) {
  Ops ops{conv_for(c), std::make_shared<ChannelBias>(c.out_channels, 0.5)};
  if (activation) ops.push_back(activation());
  return ops;
}

const std::pair<std::string, std::function<std::shared_ptr<BasicOp>()>> kActivations[] = {
    {"relu", [] { return std::make_shared<ReLU>(); }},
    {"gelu", [] { return std::make_shared<GELU>(); }},
    {"silu", [] { return std::make_shared<SiLU>(); }},
    {"none", nullptr},
};

TEST(ForwardConvBiasActivation, FiresInTheForwardPass) {
  for (const auto& [name, activation] : kActivations) {
    Sequential seq(conv_block(kCases[0], activation));
    const std::string text = seq.describe();
    const std::string forward = text.substr(0, text.find('\n'));
    const std::string expected = activation ? "ForwardConvBiasActivation(conv2d0, channelbias0, " + name + "0)"
                                            : "ForwardConvBiasActivation(conv2d0, channelbias0)";
    EXPECT_NE(forward.find(expected), std::string::npos) << text;
  }
  // A bias of another width is not the convolution's: no fusion.
  Sequential mismatched({std::make_shared<Conv2d>(2, 3, 3), std::make_shared<ChannelBias>(4)});
  EXPECT_EQ(mismatched.describe().find("ForwardConvBiasActivation"), std::string::npos) << mismatched.describe();
}

void expect_fused_matches_unfused_everywhere() {
  std::vector<ConvCase> cases(std::begin(kCases), std::end(kCases));
  cases.insert(cases.end(), std::begin(kOnednnCases), std::end(kOnednnCases));
  for (const auto& [name, activation] : kActivations) {
    for (const ConvCase& c : cases) {
      for (DType dtype : {DType::Float64, DType::Float32}) {
        for (bool training : {true, false}) {
          for (bool input_grad : {true, false}) {
            for (bool freeze_weight : {false, true}) {
              SCOPED_TRACE(name + " " + name_of(c) + " " + dtype_name(dtype) + (training ? " train" : " eval") +
                           (input_grad ? " input-grad" : "") + (freeze_weight ? " weight-frozen" : ""));
              Sequential seq(conv_block(c, activation));
              seq.to(dtype).train(training);
              if (freeze_weight) seq.parameters()[0].set_requires_grad(false);
              testing::RunOptions options;
              options.input_requires_grad = input_grad;
              const Tolerance tol = tolerance_for(dtype);
              testing::expect_fused_matches_unfused(seq, input_for(c, dtype, 11), {}, tol.rtol, tol.atol, options);
            }
          }
        }
      }
    }
  }
}

TEST(ForwardConvBiasActivation, FusedMatchesUnfusedOnOutputsAndEveryGrad) {
  for (CpuGemm library : kLibraries) with_library(library, expect_fused_matches_unfused_everywhere);
}

// The oneDNN convolution and im2col + OpenBLAS give the same float32 outputs and grads.
TEST(Conv2d, OnednnAndIm2colAgreeInFloat32) {
  for (const auto& [name, activation] : kActivations) {
    for (const ConvCase& c : kOnednnCases) {
      SCOPED_TRACE(name + " " + name_of(c));
      Sequential seq(conv_block(c, activation));
      RunResult runs[2];
      for (int i = 0; i < 2; ++i) {
        with_library(kLibraries[i], [&] { runs[i] = run_with_backward(seq, input_for(c, DType::Float32, 5), {}); });
      }
      const Tolerance tol = tolerance_for(DType::Float32);
      testing::expect_runs_match(runs[0], runs[1], tol.rtol, tol.atol);
    }
  }
}

TEST(ForwardConvBiasActivation, FusedGradientsMatchFiniteDifferences) {
  for (const auto& [name, activation] : kActivations) {
    SCOPED_TRACE(name);
    Sequential seq(conv_block(kCases[1], activation));
    seq.to(DType::Float64);
    std::string worst;
    EXPECT_LT(sequential_gradient_error(seq, input_for(kCases[1], DType::Float64), {}, &worst), 1e-6) << worst;
  }
}

void expect_bad_inputs_name_the_op_and_shapes() {
  Sequential seq({std::make_shared<Conv2d>(3, 4, 3, 1, 0), std::make_shared<ChannelBias>(4)});
  testing::expect_error([&] { seq(zeros({2, 3, 8})); }, {"Conv2d(conv2d0)", "[2, 3, 8]", "[batch, 3 channels"});
  testing::expect_error([&] { seq(zeros({2, 5, 8, 8})); }, {"Conv2d(conv2d0)", "[2, 5, 8, 8]"});
  testing::expect_error([&] { seq(zeros({2, 3, 2, 8})); }, {"Conv2d(conv2d0)", "[2, 3, 2, 8]", "smaller than the 3x3"});
  testing::expect_error([&] { seq(zeros({2, 3, 8, 8}, DType::Float64)); }, {"Conv2d(conv2d0)", "float64", "float32"});
  testing::expect_error([] { Conv2d(3, 4, 0); }, {"Conv2d", "kernel 0"});
  Sequential bias({std::make_shared<ChannelBias>(4)});
  testing::expect_error([&] { bias(zeros({2, 3, 5, 5})); }, {"ChannelBias(channelbias0)", "[2, 3, 5, 5]", "4 channels"});
}

TEST(Conv2d, BadInputsNameTheOpAndShapes) {
  for (CpuGemm library : kLibraries) with_library(library, expect_bad_inputs_name_the_op_and_shapes);
}

void expect_empty_batch_gives_zero_weight_grad() {
  auto conv = std::make_shared<Conv2d>(2, 3, 3, 1, 1);
  Sequential seq({conv});
  seq.set_fusion_switches(false);
  const RunResult run = run_with_backward(seq, zeros({0, 2, 4, 4}), {});
  EXPECT_EQ(run.outputs[0].shape(), (Shape{0, 3, 4, 4}));
  for (double g : run.param_grads[0].to(DType::Float64).to_vector<double>()) EXPECT_EQ(g, 0);
}

TEST(Conv2d, EmptyBatchGivesEmptyOutputAndZeroWeightGrad) {
  for (CpuGemm library : kLibraries) with_library(library, expect_empty_batch_gives_zero_weight_grad);
}

}  // namespace
}  // namespace fuselab
