// SGD against hand-computed steps.
#include <gtest/gtest.h>

#include "optim/sgd.h"
#include "tensor/factories.h"

namespace fuselab {
namespace {

Tensor param(double value) {
  Tensor p = full({1}, value, DType::Float64);
  p.set_requires_grad(true);
  return p;
}

// Runs `steps` steps with a constant grad g and returns the parameter after each.
std::vector<double> trajectory(SGDOptions options, double start, double g, int steps) {
  Tensor p = param(start);
  SGD sgd({p}, options);
  std::vector<double> values;
  for (int i = 0; i < steps; ++i) {
    p.set_grad(full({1}, g, DType::Float64));
    sgd.step();
    values.push_back(p.item());
  }
  return values;
}

TEST(SGD, PlainStep) {
  const auto v = trajectory({0.1}, 1.0, 2.0, 2);
  EXPECT_DOUBLE_EQ(v[0], 0.8);
  EXPECT_DOUBLE_EQ(v[1], 0.6);
}

TEST(SGD, MomentumAccumulates) {
  // b1 = 2, p1 = 1 - 0.1*2 = 0.8; b2 = 0.9*2 + 2 = 3.8, p2 = 0.8 - 0.38 = 0.42
  const auto v = trajectory({0.1, 0.9}, 1.0, 2.0, 2);
  EXPECT_NEAR(v[0], 0.8, 1e-15);
  EXPECT_NEAR(v[1], 0.42, 1e-15);
}

TEST(SGD, NesterovLooksAhead) {
  // b1 = 2, d1 = 2 + 0.9*2 = 3.8, p1 = 1 - 0.38 = 0.62; b2 = 3.8, d2 = 2 + 3.42 = 5.42, p2 = 0.62 - 0.542
  const auto v = trajectory({0.1, 0.9, 0, true}, 1.0, 2.0, 2);
  EXPECT_NEAR(v[0], 0.62, 1e-15);
  EXPECT_NEAR(v[1], 0.078, 1e-15);
}

TEST(SGD, WeightDecayAddsToTheGrad) {
  // d = 2 + 0.5 * 1 = 2.5, p = 1 - 0.25
  EXPECT_NEAR(trajectory({0.1, 0, 0.5}, 1.0, 2.0, 1)[0], 0.75, 1e-15);
}

TEST(SGD, SkipsParametersWithoutGradAndRejectsBadOptions) {
  Tensor p = param(3);
  SGD sgd({p}, {0.1});
  sgd.step();
  EXPECT_EQ(p.item(), 3);
  EXPECT_THROW(SGD({p}, {-1.0}), Error);
  EXPECT_THROW(SGD({p}, {0.1, 0, 0, true}), Error);
}

}  // namespace
}  // namespace fuselab
