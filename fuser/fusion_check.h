// Automatic equivalence checks for fusions.
//
// check_fusion(name, seq, x, extras) runs the Sequential with only that fusion enabled and with
// fusion off, and compares the outputs and every gradient (input, extra inputs, parameters)
// with tolerances by dtype. Running a forward fusion with the unfused backward (and the reverse)
// also checks the saved-state contract: a basic op's backward throws when the context lacks the
// state it needs. In float64 on the CPU it also checks the fused gradients against finite
// differences. The Sequential's fusion switches are put back as they were.
//
// Fusions can register an example model (register_fusion_example), so that one test checks
// every registered fusion, including ones added later, without a new test.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fuser/sequential.h"
#include "tensor/random.h"

namespace fuselab {

// One call and its backward from L = sum_k sum(outputs[k] * w_k), w_k fixed random weights.
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

// sum over k of sum(outputs[k] * w_k), with w_k drawn from seeds seed, seed + 1, ...: one scalar
// to which every element of every output contributes.
Tensor projected_loss(const std::vector<Tensor>& outputs, uint64_t seed);

// Runs seq on fresh leaf copies of x and extras and backprops projected_loss of the outputs; the
// parameters' grads are reset.
RunResult run_with_backward(Sequential& seq, const Tensor& x, const std::vector<Tensor>& extras,
                            const RunOptions& options = {});

// "" when every tensor matches within |a - b| <= atol + rtol |b|; otherwise what differs first.
std::string compare_runs(const RunResult& actual, const RunResult& expected, double rtol, double atol);

// The largest finite-difference error (autograd/gradcheck.h) of the grads of the input, the
// extra inputs and every parameter, through seq as it is configured (float64 inputs and
// parameters). `worst`, when given, receives where it was.
double sequential_gradient_error(Sequential& seq, const Tensor& x, const std::vector<Tensor>& extras,
                                 std::string* worst = nullptr);

struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance_for(DType dtype);  // float64: 1e-10, 1e-12; float32: 1e-5, 1e-5

struct FusionCheckResult {
  bool fired = false;       // the fusion produced a fused op in some list
  bool ok = false;          // fired, and everything matched
  std::string lists;        // describe() with only this fusion enabled
  std::string problem;      // "" when ok
  double finite_difference_error = -1;  // float64 CPU only
};

FusionCheckResult check_fusion(const std::string& name, Sequential& seq, const Tensor& x,
                               const std::vector<Tensor>& extras = {});

void register_fusion_example(const std::string& fusion, FusionExampleMaker maker);
// The example registered for a fusion, or an empty function.
FusionExampleMaker fusion_example(const std::string& fusion);

}  // namespace fuselab
