// Helpers for Sequential tests: run a call and its backward from a fixed random projection of
// every output, collect every grad, and compare two such runs (fused against unfused).
#pragma once

#include <string>
#include <vector>

#include "fuser/sequential.h"
#include "tensor/tensor.h"

namespace fuselab::testing {

struct RunResult {
  std::vector<Tensor> outputs;      // output, then public extra outputs
  std::vector<Tensor> input_grads;  // input, then extra inputs (undefined where not required)
  std::vector<Tensor> param_grads;  // in parameters() order (undefined where frozen)
};

struct RunOptions {
  bool input_requires_grad = true;
  bool extra_inputs_require_grad = true;
  uint64_t seed = 99;  // of the projection weights
};

// Copies x and extras to fresh leaves, runs seq, backprops L = sum_k sum(outputs[k] * w_k).
RunResult run_with_backward(Sequential& seq, const Tensor& x, const std::vector<Tensor>& extras,
                            const RunOptions& options = {});

// Max |a - b| / (atol + |b|) style check over every tensor of two runs.
void expect_runs_match(const RunResult& actual, const RunResult& expected, double rtol, double atol);

// Random uniform in [-1, 1) of the given dtype.
Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed);

}  // namespace fuselab::testing
