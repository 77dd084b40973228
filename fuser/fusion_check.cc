#include "fuser/fusion_check.h"

#include <cmath>
#include <map>
#include <mutex>
#include <sstream>

#include "autograd/functional.h"
#include "autograd/gradcheck.h"
#include "tensor/factories.h"

namespace fuselab {

Tensor projected_loss(const std::vector<Tensor>& outputs, uint64_t seed) {
  Tensor loss;
  for (size_t k = 0; k < outputs.size(); ++k) {
    Generator gen(seed + k);
    const Tensor weights = uniform(outputs[k].shape(), -1, 1, outputs[k].dtype(), &gen).to(outputs[k].device());
    const Tensor term = sum(mul(outputs[k], weights));
    loss = loss.defined() ? add(loss, term) : term;
  }
  return loss;
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

  const Tensor loss = projected_loss(result.outputs, options.seed);
  if (loss.requires_grad()) backward(loss);
  result.input_grads.push_back(input.grad());
  for (const Tensor& e : extra_inputs) result.input_grads.push_back(e.grad());
  for (const Tensor& p : seq.parameters()) result.param_grads.push_back(p.grad());
  seq.zero_grad();
  return result;
}

namespace {

std::string compare_lists(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected, double rtol,
                          double atol, const char* what) {
  std::ostringstream problem;
  if (actual.size() != expected.size()) {
    problem << what << ": " << actual.size() << " tensors, expected " << expected.size();
    return problem.str();
  }
  for (size_t k = 0; k < actual.size(); ++k) {
    if (actual[k].defined() != expected[k].defined()) {
      problem << what << " " << k << ": " << (actual[k].defined() ? "present" : "missing") << ", expected "
              << (expected[k].defined() ? "present" : "missing");
      return problem.str();
    }
    if (!actual[k].defined()) continue;
    if (actual[k].shape() != expected[k].shape()) {
      problem << what << " " << k << ": shape " << actual[k].shape() << ", expected " << expected[k].shape();
      return problem.str();
    }
    const auto a = actual[k].to(DType::Float64).to_vector<double>();
    const auto e = expected[k].to(DType::Float64).to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) {
      if (!(std::abs(a[i] - e[i]) <= atol + rtol * std::abs(e[i]))) {
        problem << what << " " << k << " element " << i << ": " << a[i] << ", expected " << e[i];
        return problem.str();
      }
    }
  }
  return "";
}

}  // namespace

std::string compare_runs(const RunResult& actual, const RunResult& expected, double rtol, double atol) {
  for (const std::string& problem :
       {compare_lists(actual.outputs, expected.outputs, rtol, atol, "output"),
        compare_lists(actual.input_grads, expected.input_grads, rtol, atol, "input grad"),
        compare_lists(actual.param_grads, expected.param_grads, rtol, atol, "param grad")}) {
    if (!problem.empty()) return problem;
  }
  return "";
}

Tolerance tolerance_for(DType dtype) {
  return dtype == DType::Float64 ? Tolerance{1e-10, 1e-12} : Tolerance{1e-5, 1e-5};
}

namespace {

bool has_fused_op(const FusedLists& lists) {
  for (const auto* list : {&lists.forward.ops, &lists.backward.ops}) {
    for (const auto& op : *list) {
      if (op->is_fused()) return true;
    }
  }
  return false;
}

}  // namespace

double sequential_gradient_error(Sequential& seq, const Tensor& x, const std::vector<Tensor>& extras,
                                 std::string* worst) {
  std::vector<Tensor> inputs{x};
  inputs.insert(inputs.end(), extras.begin(), extras.end());
  const size_t first_param = inputs.size();
  std::vector<std::pair<BasicOp*, size_t>> params;
  for (const auto& op : seq.ops()) {
    for (size_t p = 0; p < op->parameters().size(); ++p) {
      params.push_back({op.get(), p});
      inputs.push_back(op->parameters()[p]);
    }
  }
  const std::vector<Tensor> saved_params(inputs.begin() + first_param, inputs.end());
  const GradCheckResult result = check_gradients(
      [&](const std::vector<Tensor>& in) {
        for (size_t k = 0; k < params.size(); ++k) params[k].first->parameter(params[k].second) = in[first_param + k];
        const SequentialOutput out = seq(in[0], std::vector<Tensor>(in.begin() + 1, in.begin() + first_param));
        std::vector<Tensor> outputs{out.output};
        outputs.insert(outputs.end(), out.extra_outputs.begin(), out.extra_outputs.end());
        return projected_loss(outputs, 7);
      },
      inputs);
  for (size_t k = 0; k < params.size(); ++k) params[k].first->parameter(params[k].second) = saved_params[k];
  if (worst) *worst = result.worst;
  return result.max_error;
}

FusionCheckResult check_fusion(const std::string& name, Sequential& seq, const Tensor& x,
                               const std::vector<Tensor>& extras) {
  FusionCheckResult result;
  const FusionSwitchesScope restore(seq, FusionSwitches::only({name}));
  try {
    result.lists = seq.describe();
    result.fired = has_fused_op(*seq.fused_lists());
    const Tolerance tol = tolerance_for(x.dtype() == DType::Int64 ? seq.parameters().at(0).dtype() : x.dtype());
    const RunResult fused = run_with_backward(seq, x, extras);
    if (x.dtype() == DType::Float64 && x.device().is_cpu()) {
      std::string worst;
      result.finite_difference_error = sequential_gradient_error(seq, x, extras, &worst);
      if (result.finite_difference_error > 1e-6) result.problem = "finite differences disagree: " + worst;
    }
    seq.set_fusion_switches(false);
    const RunResult unfused = run_with_backward(seq, x, extras);
    if (result.problem.empty()) result.problem = compare_runs(fused, unfused, tol.rtol, tol.atol);
  } catch (const Error& e) {
    result.problem = std::string("error: ") + e.what();
  }
  if (result.problem.empty() && !result.fired) result.problem = "the fusion did not fire:\n" + result.lists;
  result.ok = result.problem.empty();
  return result;
}

namespace {
std::mutex examples_mutex;
std::map<std::string, FusionExampleMaker>& examples() {
  static auto* map = new std::map<std::string, FusionExampleMaker>();
  return *map;
}
}  // namespace

void register_fusion_example(const std::string& fusion, FusionExampleMaker maker) {
  std::lock_guard<std::mutex> lock(examples_mutex);
  examples()[fusion] = std::move(maker);
}

FusionExampleMaker fusion_example(const std::string& fusion) {
  std::lock_guard<std::mutex> lock(examples_mutex);
  auto it = examples().find(fusion);
  return it == examples().end() ? FusionExampleMaker() : it->second;
}

}  // namespace fuselab
