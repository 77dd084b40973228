// GoogleTest helpers for Sequential tests, on top of fuser/fusion_check.h.
#pragma once

#include <string>
#include <vector>

#include "fuser/fusion_check.h"

namespace fuselab::testing {

using fuselab::RunOptions;
using fuselab::RunResult;
using fuselab::run_with_backward;

// Every output and grad of two runs agree within |a - b| <= atol + rtol |b|.
void expect_runs_match(const RunResult& actual, const RunResult& expected, double rtol, double atol);

// Runs seq fused, then with fusion switched off, and expects the two runs to match (as
// expect_runs_match). Leaves fusion off.
void expect_fused_matches_unfused(Sequential& seq, const Tensor& x, const std::vector<Tensor>& extras, double rtol,
                                  double atol, const RunOptions& options = {});

// check_fusion(name, seq, x, extras) passes: the fusion fires and matches the unfused run.
void expect_fusion_equivalent(const std::string& name, Sequential& seq, const Tensor& x,
                              const std::vector<Tensor>& extras = {});

// Random uniform in [-1, 1) of the given dtype.
Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed);

}  // namespace fuselab::testing
