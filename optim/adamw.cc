#include "optim/adamw.h"


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
  step_all<kernels::AdamWStep>("AdamW", stepped, grads, 2, hyper);
}

}  // namespace fuselab
