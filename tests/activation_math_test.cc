// The float approximations behind the activations agree with the float64 functions.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/activation_math.h"

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
  }
}

}  // namespace
}  // namespace fuselab::kernels
