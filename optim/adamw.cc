#include "optim/adamw.h"

#include "kernels/cpu/optimizer_steps.h"
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
  const kernels::cpu::AdamWHyper hyper{lr_, o.beta1, o.beta2, o.eps, o.weight_decay, steps_ + 1};
  for (size_t k = 0; k < params_.size(); ++k) {
    const Tensor grad = params_[k].grad();
    if (!grad.defined()) continue;
    dispatch_floating(params_[k].dtype(), "AdamW", [&](auto zero) {
      using T = decltype(zero);
      kernels::cpu::adamw_step(params_[k].data<T>(), grad.data<T>(), buffer(0, k).data<T>(), buffer(1, k).data<T>(),
                               params_[k].numel(), hyper);
    });
  }
  ++steps_;
}

}  // namespace fuselab
