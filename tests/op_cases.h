// The one table of op cases: every functional op (autograd/functional.h) and every basic op
// (ops/basic/) registered with the inputs it is run on, the dtypes it takes, its tolerances and
// a function that runs it. tests/op_cases_test.cc runs every case in every mode (float64 grads
// against finite differences, float32 against float64, each CUDA device against the CPU,
// bfloat16 against float32) and fails for an op of the sources that has no case.
//
// A case's function takes the inputs (for a basic op: its input, its extra inputs, then its
// parameters) and returns the op's outputs; the harness turns them into one scalar loss,
// sum_k sum(output_k * w_k) with fixed random w_k, so every input's and parameter's grad is
// checked. Adding an op is one line in op_cases.cc, or a few with more shapes:
//
//   add(op("softmax").input({3, 5}, -4, 4).runs(unary(softmax)));
//   add(op("Linear").input({2, 3, 4}).input({3, 4}).bfloat16().runs(basic<Linear>(4, 3)));
//
// op() names the op (a function of autograd/functional.h or a basic-op class); each input() is a
// shape and a range, ids() and labels() make int64 inputs; bfloat16() says it takes bfloat16
// (float64 and float32 it always takes; a case without bfloat16() must refuse it);
// float32_within(), bfloat16_within() and finite_differences() change the tolerances; named()
// tells apart cases of one op on the same shapes.
//
// Cases with at most kFiniteDifferenceElements floating input elements also run against finite
// differences; each op needs at least one such case.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ops/basic_op.h"
#include "tensor/random.h"
#include "tensor/tensor.h"

namespace fuselab::testing {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;
using CaseFunction = std::function<Outputs(const Inputs&)>;

constexpr int64_t kFiniteDifferenceElements = 400;

// How one input is made, always the same way for a case (seeded by its position).
struct InputSpec {
  Shape shape;
  double low = -1, high = 1;  // floating: uniform in [low, high)
  int64_t id_limit = 0;       // when > 0: int64 ids in [0, id_limit)
  bool ignore_some = false;   // ids: every fifth one is -100 (cross_entropy's ignore_index)

  bool is_floating() const { return id_limit == 0; }
  // The input in float64 (or int64 for ids), on the CPU.
  Tensor make(uint64_t seed) const;
};

// One case of the table; the setters return the case, so that a case reads as one expression.
struct OpCase {
  std::string op;  // the functional op or basic op type it covers: "matmul", "Linear"
  std::string label;  // tells apart cases of one op on the same shapes
  std::vector<InputSpec> inputs;
  CaseFunction run;
  bool takes_bfloat16 = false;
  double float32_tolerance = 1e-5;   // relative to 1 + |float64 result|, elementwise
  double bfloat16_tolerance = 3e-2;  // relative to 1 + the largest |float32 result| of the tensor
  double finite_difference_step = 1e-6;
  double finite_difference_tolerance = 1e-6;

  OpCase& input(Shape shape, double low = -1, double high = 1);
  OpCase& ids(Shape shape, int64_t limit);
  OpCase& labels(Shape shape, int64_t classes);  // ids, with every fifth ignored
  OpCase& bfloat16();
  OpCase& float32_within(double tolerance);
  OpCase& bfloat16_within(double tolerance);
  OpCase& finite_differences(double step, double tolerance);
  OpCase& named(std::string text);
  OpCase& runs(CaseFunction fn);

  // The op, the input shapes and the label, as a GoogleTest name: "add_3x1_1x4".
  std::string name() const;
  int64_t floating_elements() const;
  bool fits_finite_differences() const { return floating_elements() <= kFiniteDifferenceElements; }
  // Every input made, in float64 (ids in int64).
  Inputs make_inputs() const;
};

OpCase op(std::string name);

// Functions for the usual shapes of case.
CaseFunction unary(Tensor (*fn)(const Tensor&));
CaseFunction binary(Tensor (*fn)(const Tensor&, const Tensor&));
// A new basic op from `make` on each call, its parameters set to the inputs after its input and
// extra inputs, run through a one-op Sequential; outputs: the output, then the extra outputs.
CaseFunction basic_op(std::function<std::shared_ptr<BasicOp>()> make);
// basic_op of Op(args...).
template <class Op, class... Args>
CaseFunction basic(Args... args) {
  return basic_op([=] { return std::make_shared<Op>(args...); });
}

// The table, built once.
const std::vector<OpCase>& op_cases();

}  // namespace fuselab::testing
