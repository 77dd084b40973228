#include "optim/adamw.h"

#include "kernels/cpu/optimizer_steps.h"
#include "kernels/cuda/optimizer_steps.h"

namespace fuselab {

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options) : Optimizer(std::move(params)), options_(options) {
  check(options.lr >= 0 && options.eps >= 0 && options.weight_decay >= 0, "AdamW: lr ", options.lr, ", eps ",
        options.eps, " and weight_decay ", options.weight_decay, " must not be negative");
  check(0 <= options.beta1 && options.beta1 < 1 && 0 <= options.beta2 && options.beta2 < 1, "AdamW: betas ",
        options.beta1, ", ", options.beta2, " must be in [0, 1)");
  lr_ = options.lr;
}

void AdamW::update(const std::vector<size_t>& stepped, const std::vector<Tensor>& grads) {
  const AdamWOptions& o = options_;
  const kernels::AdamWHyper hyper{lr_, o.beta1, o.beta2, o.eps, o.weight_decay, steps_ + 1};
  for_each_stepped(
      "AdamW", stepped, grads, 2,
      [&](const auto& p) { kernels::cpu::adamw_step(p.param, p.grad, p.first, p.second, p.n, hyper); },
      [&](const auto& all, int device) { kernels::cuda::adamw_step(all, hyper, device); });
}

}  // namespace fuselab
