// The float approximations behind the activations agree with the float64 functions.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/activation_math.h"
#include "kernels/cpu/host_context.h"
#include "tests/isa_copies.h"
#include "kernels/elementwise.h"

namespace fuselab::kernels {
namespace {

TEST(ActivationMath, ExpApproxIsWithinFewUlp) {
  double worst = 0;
  for (float x = -80.0f; x <= 80.0f; x += 0.00731f) {
    const double exact = std::exp(double(x));
    worst = std::max(worst, std::abs(double(exp_approx(x)) - exact) / exact);
  }
  EXPECT_LT(worst, 4e-7);  // a few float ulp (2^-23 = 1.2e-7)
}

// The ends of the range: 0 below -87 (so e^-inf, a masked score, is exactly 0), e^88 at most
// above 88 (finite), and NaN for NaN.
TEST(ActivationMath, ExpApproxEdges) {
  EXPECT_EQ(exp_approx(-INFINITY), 0.0f);
  EXPECT_EQ(exp_approx(-87.5f), 0.0f);
  EXPECT_GT(exp_approx(-86.9f), 0.0f);
  EXPECT_NEAR(exp_approx(88.0f), std::exp(88.0), 1e-6 * std::exp(88.0));
  EXPECT_EQ(exp_approx(INFINITY), exp_approx(88.0f));
  EXPECT_TRUE(std::isnan(exp_approx(NAN)));
  EXPECT_TRUE(std::isnan(exp_approx(-NAN)));
}

TEST(ActivationMath, TanhApproxIsAccurateAndSaturates) {
  double worst = 0;
  for (float u = -12.0f; u <= 12.0f; u += 0.00317f) worst = std::max(worst, std::abs(double(tanh_approx(u)) - std::tanh(double(u))));
  EXPECT_LT(worst, 3e-7);
  EXPECT_EQ(tanh_approx(100.0f), 1.0f);
  EXPECT_EQ(tanh_approx(-100.0f), -1.0f);
}

TEST(ActivationMath, FloatActivationsMatchDouble) {
  for (float x = -10.0f; x <= 10.0f; x += 0.0173f) {
    EXPECT_NEAR(GELUMath::forward(x), GELUMath::forward(double(x)), 2e-6 * (1 + std::abs(x)));
    EXPECT_NEAR(GELUMath::grad(x), GELUMath::grad(double(x)), 5e-6);
    EXPECT_NEAR(SiLUMath::forward(x), SiLUMath::forward(double(x)), 2e-6 * (1 + std::abs(x)));
    EXPECT_NEAR(SiLUMath::grad(x), SiLUMath::grad(double(x)), 5e-6);
    EXPECT_NEAR(SigmoidMath::forward(x), SigmoidMath::forward(double(x)), 2e-7);
    EXPECT_NEAR(SigmoidMath::grad(x), SigmoidMath::grad(double(x)), 2e-7);
    EXPECT_NEAR(QGELUMath::forward(x), QGELUMath::forward(double(x)), 2e-6 * (1 + std::abs(x)));
    EXPECT_NEAR(QGELUMath::grad(x), QGELUMath::grad(double(x)), 5e-6);
    EXPECT_NEAR(SReLUMath::forward(x), SReLUMath::forward(double(x)), 1e-6 * (1 + x * x));
    EXPECT_NEAR(SReLUMath::grad(x), SReLUMath::grad(double(x)), 1e-6 * (1 + std::abs(x)));
  }
}

// The AVX2 and AVX-512 copies of the activation loops (isa.h) against the baseline copies: the same
// math, so the same values up to rounding (FMA contraction). On a CPU without an instruction set
// its run takes a lesser copy, and that comparison cannot fail.
TEST(ActivationMath, InstructionSetCopiesAgree) {
  std::vector<float> x(10007), dy(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = -8.0f + 16.0f * float(i) / float(x.size());
    dy[i] = 1.0f + float(i % 7);
  }
  for (Activation act : {Activation::ReLU, Activation::GELU, Activation::SiLU, Activation::Sigmoid,
                         Activation::QGELU, Activation::SReLU}) {
    std::vector<std::vector<float>> y(3, std::vector<float>(x.size())), dx = y;
    for (size_t c = 0; c < 3; ++c) {
      testing::with_isa(testing::kIsaCopies[c], [&] {
        cpu::HostContext ctx;
        ActivationForward<float>{act, x.data(), y[c].data(), int64_t(x.size())}.cpu(ctx);
        ActivationBackward<float>{act, x.data(), dy.data(), dx[c].data(), int64_t(x.size())}.cpu(ctx);
      });
    }
    for (size_t c = 1; c < 3; ++c) {
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_NEAR(y[c][i], y[0][i], 2e-6f * (1 + std::abs(y[0][i]))) << activation_name(act) << " at " << x[i]
                                                                        << ", " << testing::kIsaCopies[c].name;
        // act'(x) itself is good to 5e-6 in float (FloatActivationsMatchDouble); dx scales it by dy.
        ASSERT_NEAR(dx[c][i], dx[0][i], 5e-6f * dy[i]) << activation_name(act) << " at " << x[i] << ", "
                                                       << testing::kIsaCopies[c].name;
      }
    }
  }
}

}  // namespace
}  // namespace fuselab::kernels
