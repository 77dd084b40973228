#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/functional.h"
#include "tensor/factories.h"

namespace fuselab {
namespace {

double weighted_sum(const Tensor& out, const Tensor& w) {
  const auto o = out.to(DType::Float64).to_vector<double>();
  const auto wv = w.to_vector<double>();
  double total = 0;
  for (size_t i = 0; i < o.size(); ++i) total += o[i] * wv[i];
  return total;
}

}  // namespace

GradCheckResult check_gradients(const TensorFunction& f, std::vector<Tensor> inputs, double eps) {
  for (Tensor& input : inputs) {
    if (input.dtype() == DType::Float64) {
      input = input.detach().clone();
      input.set_requires_grad(true);
    }
  }
  Generator gen(1234);
  const Tensor out = f(inputs);
  const Tensor w = randn(out.shape(), DType::Float64, &gen);
  backward(sum(mul(out, w.to(out.dtype()))));

  GradCheckResult result;
  NoGradGuard no_grad;
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor& input = inputs[k];
    if (!input.requires_grad()) continue;
    const Tensor analytic = input.grad();
    double* x = input.data<double>();
    for (int64_t i = 0; i < input.numel(); ++i) {
      const double saved = x[i];
      x[i] = saved + eps;
      const double plus = weighted_sum(f(inputs), w);
      x[i] = saved - eps;
      const double minus = weighted_sum(f(inputs), w);
      x[i] = saved;
      const double numeric = (plus - minus) / (2 * eps);
      const double a = analytic.defined() ? analytic.data<double>()[i] : 0.0;
      const double error = std::abs(a - numeric) / std::max(1.0, std::abs(numeric));
      if (error > result.max_error || std::isnan(error)) {
        result.max_error = std::isnan(error) ? INFINITY : error;
        std::ostringstream where;
        where << "input " << k << " element " << i << ": analytic " << a << ", numeric " << numeric;
        result.worst = where.str();
      }
    }
  }
  return result;
}

}  // namespace fuselab
