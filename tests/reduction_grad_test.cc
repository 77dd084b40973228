// The grads sum and mean give their input (autograd/reductions.cc): dy, or dy / n, at every
// element, whatever consumes them: a leaf, a norm (fused with its residual add or not), a Linear.
// Each test compares the loss's grads with those of the same graph given that grad explicitly.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/functional.h"
#include "autograd/gradcheck.h"
#include "fuser/sequential.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/layernorm.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "tensor/factories.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::random_tensor;

std::shared_ptr<BasicOp> norm(bool layer_norm, int64_t features) {
  std::shared_ptr<BasicOp> op;
  if (layer_norm) {
    op = std::make_shared<LayerNorm>(features);
  } else {
    op = std::make_shared<RMSNorm>(features);
  }
  op->to(DType::Float64);
  return op;
}

// x + r, its branch, then the norm: fused (ForwardAddNorm, BackwardAddNorm) or not.
Sequential add_and_norm(const std::shared_ptr<BasicOp>& norm_op) {
  return Sequential({std::make_shared<AddExtraInput>(), std::make_shared<MakeExtraOutput>(), norm_op});
}

Tensor leaf(const Shape& shape, uint64_t seed) {
  return random_tensor(shape, DType::Float64, seed).set_requires_grad();
}

// The grads of x, r and every parameter after backward(loss(out)), then reset.
std::vector<Tensor> grads_of(Sequential& seq, Tensor& x, Tensor& r, const std::function<void(const Tensor&)>& loss) {
  loss(seq(x, {r}).output);
  std::vector<Tensor> grads{x.grad(), r.grad()};
  for (Tensor& p : seq.parameters()) grads.push_back(p.grad());
  x.zero_grad(), r.zero_grad(), seq.zero_grad();
  return grads;
}

void expect_same_grads(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected,
                       const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_TRUE(actual[i].defined() && expected[i].defined()) << what << " grad " << i;
    ASSERT_EQ(actual[i].shape(), expected[i].shape()) << what << " grad " << i;
    const auto a = actual[i].to_vector<double>(), e = expected[i].to_vector<double>();
    for (size_t j = 0; j < a.size(); ++j)
      ASSERT_NEAR(a[j], e[j], 1e-12 * (1 + std::abs(e[j]))) << what << " grad " << i;
  }
}

TEST(ReductionGrad, SumAndMeanThroughNormsMatchTheExplicitGrad) {
  const Shape shape{13, 37};
  for (bool layer_norm : {false, true}) {
    for (bool fused : {true, false}) {
      Sequential seq = add_and_norm(norm(layer_norm, shape[1]));
      seq.set_fusion_switches(fused);
      Tensor x = leaf(shape, 1), r = leaf(shape, 2);
      const std::string what = std::string(layer_norm ? "LayerNorm" : "RMSNorm") + (fused ? " fused" : " unfused");
      for (bool use_mean : {false, true}) {
        const double value = use_mean ? 1.0 / double(shape[0] * shape[1]) : 1.0;
        const auto reduced = grads_of(seq, x, r, [&](const Tensor& y) { backward(use_mean ? mean(y) : sum(y)); });
        const auto explicit_grad =
            grads_of(seq, x, r, [&](const Tensor& y) { backward(y, full(shape, value, DType::Float64)); });
        expect_same_grads(reduced, explicit_grad, what + (use_mean ? " mean" : " sum"));
      }
    }
  }
}

TEST(ReductionGrad, MeanThroughAddAndNormPassesFiniteDifferences) {
  for (bool layer_norm : {false, true}) {
    const std::shared_ptr<BasicOp> n = norm(layer_norm, 9);
    Sequential seq = add_and_norm(n);
    std::vector<Tensor> inputs{random_tensor({5, 9}, DType::Float64, 3), random_tensor({5, 9}, DType::Float64, 4)};
    for (const Tensor& p : n->parameters()) inputs.push_back(p.detach());
    const GradCheckResult result = check_gradients(
        [&](const std::vector<Tensor>& in) {
          for (size_t p = 0; p < n->parameters().size(); ++p) n->parameter(p) = in[2 + p];
          return mean(seq(in[0], {in[1]}).output);
        },
        inputs);
    EXPECT_LT(result.max_error, 1e-7) << (layer_norm ? "LayerNorm " : "RMSNorm ") << result.worst;
  }
}

// Into a Linear and a leaf: sum gives ones, mean 1 / n, and a reduction's grad meeting another adds.
TEST(ReductionGrad, SumAndMeanIntoALinearAndLeaves) {
  Tensor x = leaf({6, 4}, 7), r = leaf({6, 4}, 8);
  Sequential linear({std::make_shared<Linear>(4, 4), std::make_shared<AddExtraInput>()});
  linear.to(DType::Float64);
  const auto reduced = grads_of(linear, x, r, [](const Tensor& y) { backward(sum(y)); });
  const auto expected =
      grads_of(linear, x, r, [](const Tensor& y) { backward(y, full(y.shape(), 1.0, DType::Float64)); });
  expect_same_grads(reduced, expected, "Linear");

  backward(sum(x));
  EXPECT_EQ(x.grad().shape(), x.shape());
  for (double g : x.grad().to_vector<double>()) EXPECT_EQ(g, 1.0);
  x.zero_grad();
  backward(scale(mean(x), 3.0));  // a grad of 3 into mean: 3 / 24 at every element
  for (double g : x.grad().to_vector<double>()) EXPECT_DOUBLE_EQ(g, 3.0 / 24);
  x.zero_grad();

  backward(add(mean(x), sum(mul(x, x))));  // d/dx = 1/24 + 2x
  const auto xs = x.to_vector<double>(), gs = x.grad().to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_NEAR(gs[i], 1.0 / 24 + 2 * xs[i], 1e-15);
}

// x + r hands both leaves the same grad: each gets its own copy, so changing one leaves the other.
TEST(ReductionGrad, LeavesGivenTheSameGradDoNotShareIt) {
  Sequential seq = add_and_norm(norm(false, 8));
  Tensor x = leaf({3, 8}, 9), r = leaf({3, 8}, 10);
  backward(sum(seq(x, {r}).output));
  const std::vector<double> r_grad = r.grad().to_vector<double>();
  EXPECT_EQ(x.grad().to_vector<double>(), r_grad);
  x.grad().fill_(0.0);
  EXPECT_EQ(r.grad().to_vector<double>(), r_grad);
}

}  // namespace
}  // namespace fuselab
