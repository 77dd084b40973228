#include "tests/sequential_testing.h"

#include <gtest/gtest.h>

#include <cmath>

#include "autograd/functional.h"
#include "tensor/factories.h"

namespace fuselab::testing {

Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed) {
  Generator gen(seed);
  return uniform(shape, -1, 1, dtype, &gen);
}

RunResult run_with_backward(Sequential& seq, const Tensor& x, const std::vector<Tensor>& extras,
                            const RunOptions& options) {
  auto leaf = [](const Tensor& t, bool requires_grad) {
    Tensor copy = t.detach().clone();
    if (requires_grad && is_floating(copy.dtype())) copy.set_requires_grad(true);
    return copy;
  };
  const Tensor input = leaf(x, options.input_requires_grad);
  std::vector<Tensor> extra_inputs;
  for (const Tensor& e : extras) extra_inputs.push_back(leaf(e, options.extra_inputs_require_grad));
  seq.zero_grad();

  SequentialOutput out = seq(input, extra_inputs);
  RunResult result;
  result.outputs.push_back(out.output);
  result.outputs.insert(result.outputs.end(), out.extra_outputs.begin(), out.extra_outputs.end());

  Tensor loss;
  for (size_t k = 0; k < result.outputs.size(); ++k) {
    const Tensor& o = result.outputs[k];
    const Tensor w = random_tensor(o.shape(), o.dtype(), options.seed + k);
    const Tensor term = sum(mul(o, w));
    loss = loss.defined() ? add(loss, term) : term;
  }
  if (loss.requires_grad()) backward(loss);
  result.input_grads.push_back(input.grad());
  for (const Tensor& e : extra_inputs) result.input_grads.push_back(e.grad());
  for (const Tensor& p : seq.parameters()) result.param_grads.push_back(p.grad());
  return result;
}

namespace {

void expect_tensors_match(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected, double rtol,
                          double atol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t k = 0; k < actual.size(); ++k) {
    ASSERT_EQ(actual[k].defined(), expected[k].defined()) << what << " " << k;
    if (!actual[k].defined()) continue;
    ASSERT_EQ(actual[k].shape(), expected[k].shape()) << what << " " << k;
    const auto a = actual[k].to(DType::Float64).to_vector<double>();
    const auto e = expected[k].to(DType::Float64).to_vector<double>();
    double worst = 0;
    size_t worst_at = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const double error = std::abs(a[i] - e[i]) / (atol + rtol * std::abs(e[i]));
      if (std::isnan(error) || error > worst) {
        worst = std::isnan(error) ? INFINITY : error;
        worst_at = i;
      }
    }
    EXPECT_LE(worst, 1.0) << what << " " << k << ": element " << worst_at << " is " << a[worst_at]
                          << ", expected " << e[worst_at];
  }
}

}  // namespace

void expect_runs_match(const RunResult& actual, const RunResult& expected, double rtol, double atol) {
  expect_tensors_match(actual.outputs, expected.outputs, rtol, atol, "output");
  expect_tensors_match(actual.input_grads, expected.input_grads, rtol, atol, "input grad");
  expect_tensors_match(actual.param_grads, expected.param_grads, rtol, atol, "param grad");
}

}  // namespace fuselab::testing
