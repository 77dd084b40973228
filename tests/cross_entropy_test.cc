// The CrossEntropy op: the loss at the end of a Sequential, with the labels as its extra input. The
// op-case table checks its grads on every device; here, what the table does not: ignored rows
// against a hand-computed mean, a batch with no counted row, and bad labels.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "ops/basic/cross_entropy.h"
#include "ops/basic/linear.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::random_tensor;

// Leaf logits [2, 3, 4] of float64 that require grad.
Tensor logits_leaf() {
  Tensor x = random_tensor({2, 3, 4}, DType::Float64, 7);
  x.set_requires_grad(true);
  return x;
}

TEST(CrossEntropyOp, IsTheMeanOverRowsNotIgnoredWithSoftmaxMinusOnehotGrads) {
  const Tensor x = logits_leaf();
  const Tensor labels = from_vector<int64_t>({2, -100, 0, 3, -100, 1}, {2, 3});
  Sequential seq({std::make_shared<CrossEntropy>()});
  const Tensor loss = seq(x, {labels}).output;
  ASSERT_EQ(loss.shape(), Shape{});
  backward(loss);

  const std::vector<double> v = x.detach().to_vector<double>(), grad = x.grad().to_vector<double>();
  const std::vector<int64_t> l = labels.to_vector<int64_t>();
  double total = 0;
  for (size_t r = 0; r < 6; ++r) {
    double lse = 0;
    for (size_t j = 0; j < 4; ++j) lse += std::exp(v[r * 4 + j]);
    lse = std::log(lse);
    for (size_t j = 0; j < 4; ++j) {
      // (softmax - onehot) / 4 counted rows; nothing for an ignored row
      const double expected = l[r] < 0 ? 0 : (std::exp(v[r * 4 + j] - lse) - (int64_t(j) == l[r])) / 4;
      EXPECT_NEAR(grad[r * 4 + j], expected, 1e-14) << "row " << r << " col " << j;
    }
    if (l[r] >= 0) total += lse - v[r * 4 + size_t(l[r])];
  }
  EXPECT_NEAR(loss.item(), total / 4, 1e-14);
  EXPECT_NEAR(loss.item(), cross_entropy(reshape(x.detach(), {6, 4}), reshape(labels, {6})).item(), 1e-15);
}

// As the cross_entropy function and PyTorch: the mean over no row is NaN, so that a batch with
// nothing to learn from shows in the loss, and nothing flows back.
TEST(CrossEntropyOp, NoCountedRowGivesNanLossAndZeroGrads) {
  const Tensor x = logits_leaf();
  Sequential seq({std::make_shared<CrossEntropy>(/*ignore_index=*/-1)});
  const Tensor loss = seq(x, {from_vector<int64_t>(std::vector<int64_t>(6, -1), {2, 3})}).output;
  EXPECT_TRUE(std::isnan(loss.item()));
  backward(loss);
  for (double g : x.grad().to_vector<double>()) EXPECT_EQ(g, 0.0);
}

TEST(CrossEntropyOp, GradsReachTheLinearBeforeIt) {
  auto linear = std::make_shared<Linear>(5, 4);
  linear->to(DType::Float64);
  Sequential seq({linear, std::make_shared<CrossEntropy>()});
  const Tensor labels = from_vector<int64_t>({1, 0, -100}, {3});
  testing::expect_fused_matches_unfused(seq, random_tensor({3, 5}, DType::Float64, 3), {labels}, 1e-12, 1e-12);
}

TEST(CrossEntropyOp, ALabelOutOfRangeNamesTheOpLabelRowAndClasses) {
  Sequential seq({std::make_shared<CrossEntropy>()});
  testing::expect_error([&] { seq(zeros({2, 3}), {from_vector<int64_t>({0, 3}, {2})}); },
                        {"CrossEntropy(", "label 3", "row 1", "3 classes"});
  testing::expect_error([&] { seq(zeros({2, 3}), {from_vector<int64_t>({-2, 0}, {2})}); },
                        {"CrossEntropy(", "label -2", "row 0", "3 classes"});
}

TEST(CrossEntropyOp, LabelsOfTheWrongShapeOrDtypeNameBoth) {
  Sequential seq({std::make_shared<CrossEntropy>()});
  testing::expect_error([&] { seq(zeros({2, 3, 4}), {from_vector<int64_t>({0, 1}, {2})}); },
                        {"CrossEntropy(", "[2]", "[2, 3, 4]", "[2, 3]"});
  testing::expect_error([&] { seq(zeros({2, 3}), {zeros({2})}); }, {"CrossEntropy(", "int64", "float32"});
  testing::expect_error([&] { seq(zeros({2, 3}, DType::Int64), {from_vector<int64_t>({0, 1}, {2})}); },
                        {"CrossEntropy(", "int64"});
  testing::expect_error([&] { seq(zeros({2, 0}), {from_vector<int64_t>({0, 1}, {2})}); },
                        {"CrossEntropy(", "logits [2, 0] have no classes"});
}

}  // namespace
}  // namespace fuselab
