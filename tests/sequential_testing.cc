#include "tests/sequential_testing.h"

#include <gtest/gtest.h>

#include "tensor/factories.h"

namespace fuselab::testing {

Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed) {
  Generator gen(seed);
  return uniform(shape, -1, 1, dtype, &gen);
}

void expect_runs_match(const RunResult& actual, const RunResult& expected, double rtol, double atol) {
  const std::string problem = compare_runs(actual, expected, rtol, atol);
  EXPECT_TRUE(problem.empty()) << problem;
}

void expect_fused_matches_unfused(Sequential& seq, const Tensor& x, const std::vector<Tensor>& extras, double rtol,
                                  double atol, const RunOptions& options) {
  const RunResult fused = run_with_backward(seq, x, extras, options);
  seq.set_fusion_switches(false);
  expect_runs_match(fused, run_with_backward(seq, x, extras, options), rtol, atol);
}

void expect_fusion_equivalent(const std::string& name, Sequential& seq, const Tensor& x,
                              const std::vector<Tensor>& extras) {
  const FusionCheckResult result = check_fusion(name, seq, x, extras);
  EXPECT_TRUE(result.ok) << name << ": " << result.problem << "\n" << result.lists;
}

}  // namespace fuselab::testing
