#include "tests/op_case.h"

#include "fuser/sequential.h"
#include "tensor/factories.h"

namespace fuselab::testing {

Tensor InputSpec::make(uint64_t seed) const {
  Generator gen(seed);
  if (is_floating()) return uniform(shape, low, high, DType::Float64, &gen);
  std::vector<int64_t> values(size_t(numel(shape)));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = ignore_some && i % 5 == 1 ? -100 : int64_t(gen.next_u64() % uint64_t(id_limit));
  }
  return from_vector<int64_t>(values, shape);
}

OpCase op(std::string name) {
  OpCase c;
  c.op = std::move(name);
  return c;
}

OpCase& OpCase::input(Shape shape, double low, double high) {
  inputs.push_back({std::move(shape), low, high});
  return *this;
}

OpCase& OpCase::ids(Shape shape, int64_t limit) {
  inputs.push_back({std::move(shape), 0, 0, limit});
  return *this;
}

OpCase& OpCase::labels(Shape shape, int64_t classes) {
  inputs.push_back({std::move(shape), 0, 0, classes, true});
  return *this;
}

OpCase& OpCase::bfloat16() {
  takes_bfloat16 = true;
  return *this;
}

OpCase& OpCase::compute_dtype_outputs() {
  outputs_in_compute_dtype = true;
  return *this;
}

OpCase& OpCase::float32_within(double tolerance) {
  float32_tolerance = tolerance;
  return *this;
}

OpCase& OpCase::bfloat16_within(double tolerance) {
  bfloat16_tolerance = tolerance;
  return *this;
}

OpCase& OpCase::finite_differences(double step, double tolerance) {
  finite_difference_step = step;
  finite_difference_tolerance = tolerance;
  return *this;
}

OpCase& OpCase::named(std::string text) {
  label = std::move(text);
  return *this;
}

OpCase& OpCase::runs(CaseFunction fn) {
  run = std::move(fn);
  return *this;
}

std::string OpCase::name() const {
  std::string text = op;
  for (const InputSpec& in : inputs) {
    text += "_";
    if (in.shape.empty()) text += "scalar";
    for (size_t d = 0; d < in.shape.size(); ++d) text += (d ? "x" : "") + std::to_string(in.shape[d]);
  }
  if (!label.empty()) text += "_" + label;
  return text;
}

int64_t OpCase::floating_elements() const {
  int64_t total = 0;
  for (const InputSpec& in : inputs) total += in.is_floating() ? numel(in.shape) : 0;
  return total;
}

Inputs OpCase::make_inputs() const {
  Inputs made;
  for (size_t k = 0; k < inputs.size(); ++k) made.push_back(inputs[k].make(1 + k));
  return made;
}

CaseFunction unary(Tensor (*fn)(const Tensor&)) {
  return [fn](const Inputs& x) { return Outputs{fn(x.at(0))}; };
}

CaseFunction binary(Tensor (*fn)(const Tensor&, const Tensor&)) {
  return [fn](const Inputs& x) { return Outputs{fn(x.at(0), x.at(1))}; };
}

CaseFunction basic_op(std::function<std::shared_ptr<BasicOp>()> make) {
  return [make](const Inputs& x) {
    const std::shared_ptr<BasicOp> basic = make();
    const size_t extras = size_t(basic->num_extra_inputs()), params = basic->parameters().size();
    check(x.size() == 1 + extras + params, basic->type(), " takes 1 input, ", extras, " extra inputs and ", params,
          " parameters; the case gives ", x.size(), " tensors");
    for (size_t p = 0; p < params; ++p) basic->parameter(p) = x[1 + extras + p];
    Sequential seq({basic});
    const SequentialOutput out = seq(x[0], Inputs(x.begin() + 1, x.begin() + 1 + extras));
    Outputs outputs{out.output};
    outputs.insert(outputs.end(), out.extra_outputs.begin(), out.extra_outputs.end());
    return outputs;
  };
}

}  // namespace fuselab::testing
