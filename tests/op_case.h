// One case of the op-case table (op_cases.h) and the builder that writes it: the op it covers,
// how each input is made, the dtypes it takes, its tolerances and the function that runs it.
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

// Cases with at most this many floating input elements also run against finite differences,
// which call the case twice per element.
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
  std::string op;     // the functional op or basic op type it covers: "matmul", "Linear"
  std::string label;  // tells apart cases of one op on the same shapes
  std::vector<InputSpec> inputs;
  CaseFunction run;
  bool takes_bfloat16 = false;
  bool outputs_in_compute_dtype = false;  // a loss: float32 outputs in a bfloat16 run (its grads are bfloat16)
  double float32_tolerance = 1e-5;   // relative to 1 + |float64 result|, elementwise
  double bfloat16_tolerance = 3e-2;  // relative to 1 + the largest |float32 result| of the tensor
  double finite_difference_step = 1e-6;
  double finite_difference_tolerance = 1e-6;

  OpCase& input(Shape shape, double low = -1, double high = 1);
  OpCase& ids(Shape shape, int64_t limit);
  OpCase& labels(Shape shape, int64_t classes);  // ids, with every fifth ignored
  OpCase& bfloat16();
  OpCase& compute_dtype_outputs();
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

}  // namespace fuselab::testing
