#include "optim/adamw.h"

#include <cmath>

namespace fuselab {

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions options)
    : Optimizer("AdamW", std::move(groups), {options.lr, options.weight_decay}), options_(options) {
  // eps keeps the update finite where both moments are 0 (a zero grad): 0 / 0 otherwise.
  check(options.eps > 0 && std::isfinite(options.eps), "AdamW: eps ", options.eps, " must be finite and above 0");
  check(0 <= options.beta1 && options.beta1 < 1 && 0 <= options.beta2 && options.beta2 < 1, "AdamW: betas ",
        options.beta1, ", ", options.beta2, " must be in [0, 1)");
}

void AdamW::update(const GroupHyper& group, const std::vector<size_t>& stepped, const std::vector<Tensor>& grads) {
  const AdamWOptions& o = options_;
  const kernels::AdamWHyper hyper{group.lr, o.beta1, o.beta2, o.eps, group.weight_decay, steps_ + 1};
  step_all<kernels::AdamWStep>("AdamW", stepped, grads, 2, hyper);
}

}  // namespace fuselab
