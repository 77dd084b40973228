// oneDNN's convolutions (kernels/cpu/onednn_conv.h) in float32 against FuseLab's float64 im2col +
// GEMM kernels (checked against the direct convolution and finite differences in conv2d_test):
// forward with every bias and activation post-op, backward data and backward weights, at odd
// geometries (stride, padding, 1x1 kernels, channels that are not multiples of 8 or 16, batch 1);
// and that the geometry the benchmark runs does run on oneDNN. //tests:onednn_conv_avx2_test runs
// this file with oneDNN capped at AVX2 (channel blocks of 8, not 16).
#include "kernels/cpu/onednn_conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/conv2d.h"
#include "kernels/cpu/host_context.h"

namespace fuselab::kernels::cpu {
namespace {

// batch, in channels, height, width, out channels, kernel h, kernel w, stride, padding
const Conv2dGeometry kGeometries[] = {
    {2, 3, 5, 6, 4, 3, 3, 1, 1},     {1, 2, 7, 5, 3, 3, 3, 2, 1},   {3, 4, 4, 4, 2, 1, 1, 1, 0},
    {1, 17, 9, 11, 19, 3, 3, 2, 1},  {2, 5, 8, 8, 33, 1, 1, 1, 0},  {1, 24, 6, 7, 40, 3, 3, 1, 2},
    {2, 16, 10, 10, 16, 3, 3, 1, 1}, {1, 3, 13, 13, 8, 5, 5, 2, 2}, {2, 64, 8, 8, 64, 3, 3, 1, 1},
};

std::string name_of(const Conv2dGeometry& g) {
  return "N" + std::to_string(g.batch) + " C" + std::to_string(g.in_channels) + " K" + std::to_string(g.out_channels) +
         " " + std::to_string(g.height) + "x" + std::to_string(g.width) + " kernel " + std::to_string(g.kernel_h) +
         " stride " + std::to_string(g.stride) + " pad " + std::to_string(g.padding);
}

std::vector<float> random_values(int64_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = uniform(gen);
  return values;
}

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// Float32 sums of a few hundred products against float64 ones.
void expect_close(const std::vector<float>& actual, const std::vector<double>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], 2e-5 + 2e-5 * std::abs(expected[i])) << what << " at " << i;
  }
}

struct Operands {
  explicit Operands(const Conv2dGeometry& g)
      : x(random_values(g.batch * g.in_channels * g.in_plane(), 1)),
        w(random_values(g.out_channels * g.patch(), 2)),
        b(random_values(g.out_channels, 3)),
        dy(random_values(g.batch * g.out_channels * g.out_plane(), 4)) {}
  std::vector<float> x, w, b, dy;
};

double activate(Activation act, double v) {
  double y = 0;
  with_activation(act, [&](auto math) { y = math.forward(v); });
  return y;
}

const Activation kActivations[] = {Activation::None,    Activation::ReLU,  Activation::GELU, Activation::SiLU,
                                   Activation::Sigmoid, Activation::QGELU, Activation::SReLU};

TEST(OnednnConv, ForwardWithBiasAndActivationMatchesFloat64) {
  for (const Conv2dGeometry& g : kGeometries) {
    const Operands o(g);
    std::vector<double> y64(size_t(g.batch * g.out_channels * g.out_plane()));
    HostContext ctx;
    Conv2dForward<double>{g, widen(o.x).data(), widen(o.w).data(), y64.data()}.cpu(ctx);
    for (Activation act : kActivations) {
      for (bool bias : {false, true}) {
        SCOPED_TRACE(name_of(g) + " " + activation_name(act) + (bias ? " bias" : ""));
        std::vector<double> expected(y64.size());
        for (size_t i = 0; i < y64.size(); ++i) {
          expected[i] = activate(act, y64[i] + (bias ? o.b[(i / g.out_plane()) % g.out_channels] : 0.0));
        }
        std::vector<float> y(y64.size(), NAN);
        if (!onednn_conv_forward(g, o.x.data(), o.w.data(), bias ? o.b.data() : nullptr, act, y.data(), ctx)) {
          continue;  // no fast implementation: the kernels run im2col + GEMM (conv2d_test)
        }
        expect_close(y, expected, "y");
      }
    }
  }
}

TEST(OnednnConv, BackwardDataAndWeightsMatchFloat64) {
  for (const Conv2dGeometry& g : kGeometries) {
    SCOPED_TRACE(name_of(g));
    const Operands o(g);
    HostContext ctx;
    std::vector<double> dx64(o.x.size()), dw64(o.w.size());
    Conv2dBackwardData<double>{g, widen(o.w).data(), widen(o.dy).data(), dx64.data()}.cpu(ctx);
    Conv2dBackwardFilter<double>{g, widen(o.x).data(), widen(o.dy).data(), dw64.data()}.cpu(ctx);
    std::vector<float> dx(o.x.size(), NAN), dw(o.w.size(), NAN);
    if (onednn_conv_backward_data(g, o.w.data(), o.dy.data(), dx.data(), ctx)) expect_close(dx, dx64, "dx");
    if (onednn_conv_backward_weights(g, o.x.data(), o.dy.data(), dw.data(), ctx)) expect_close(dw, dw64, "dw");
  }
}

// The benchmark's geometry and the odd ones above all have fast oneDNN implementations on an
// x86-64 CPU with AVX2 or more; were that to change, every test above would pass vacuously.
TEST(OnednnConv, RunsOnOnednnForEveryTestedGeometry) {
  const Conv2dGeometry bench{32, 64, 32, 32, 64, 3, 3, 1, 1};
  for (const Conv2dGeometry& g : kGeometries) {
    SCOPED_TRACE(name_of(g));
    const Operands o(g);
    HostContext ctx;
    std::vector<float> y(size_t(g.batch * g.out_channels * g.out_plane())), dx(o.x.size()), dw(o.w.size());
    EXPECT_TRUE(onednn_conv_forward(g, o.x.data(), o.w.data(), o.b.data(), Activation::GELU, y.data(), ctx));
    EXPECT_TRUE(onednn_conv_backward_data(g, o.w.data(), o.dy.data(), dx.data(), ctx));
    EXPECT_TRUE(onednn_conv_backward_weights(g, o.x.data(), o.dy.data(), dw.data(), ctx));
  }
  const Operands o(bench);
  HostContext ctx;
  std::vector<float> y(size_t(bench.batch * bench.out_channels * bench.out_plane()));
  EXPECT_TRUE(onednn_conv_forward(bench, o.x.data(), o.w.data(), o.b.data(), Activation::GELU, y.data(), ctx));
}

// An empty batch is left to the im2col kernels (which write nothing, or zero weight grads).
TEST(OnednnConv, EmptyBatchIsNotOnednns) {
  const Conv2dGeometry g{0, 2, 4, 4, 3, 3, 3, 1, 1};
  HostContext ctx;
  std::vector<float> w(size_t(g.out_channels * g.patch())), dw(w.size(), 7.f);
  EXPECT_FALSE(onednn_conv_forward(g, nullptr, w.data(), nullptr, Activation::None, nullptr, ctx));
  EXPECT_FALSE(onednn_conv_backward_weights(g, nullptr, nullptr, dw.data(), ctx));
  EXPECT_EQ(dw[0], 7.f);
}

}  // namespace
}  // namespace fuselab::kernels::cpu
