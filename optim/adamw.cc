#include "optim/adamw.h"

#include <cmath>

#include "tensor/dispatch.h"

namespace fuselab {

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options) : Optimizer(std::move(params)), options_(options) {
  check(options.lr >= 0 && options.eps >= 0 && options.weight_decay >= 0, "AdamW: lr ", options.lr, ", eps ",
        options.eps, " and weight_decay ", options.weight_decay, " must not be negative");
  check(0 <= options.beta1 && options.beta1 < 1 && 0 <= options.beta2 && options.beta2 < 1, "AdamW: betas ",
        options.beta1, ", ", options.beta2, " must be in [0, 1)");
  lr_ = options.lr;
}

void AdamW::step() {
  const AdamWOptions& o = options_;
  const int64_t t = steps_ + 1;
  const double correction1 = 1 - std::pow(o.beta1, double(t)), correction2 = 1 - std::pow(o.beta2, double(t));
  for (size_t k = 0; k < params_.size(); ++k) {
    const Tensor grad = params_[k].grad();
    if (!grad.defined()) continue;
    dispatch_floating(params_[k].dtype(), "AdamW", [&](auto zero) {
      using T = decltype(zero);
      T* p = params_[k].data<T>();
      const T* g = grad.data<T>();
      T* m = buffer(0, k).data<T>();
      T* v = buffer(1, k).data<T>();
      const T decay = T(1 - lr_ * o.weight_decay), b1 = T(o.beta1), b2 = T(o.beta2);
      const T step_size = T(lr_ / correction1), root_correction2 = T(std::sqrt(correction2));
      for (int64_t i = 0; i < params_[k].numel(); ++i) {
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        p[i] = p[i] * decay - step_size * m[i] / (std::sqrt(v[i]) / root_correction2 + T(o.eps));
      }
    });
  }
  steps_ = t;
}

}  // namespace fuselab
