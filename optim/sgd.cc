#include "optim/sgd.h"

#include <cmath>

namespace fuselab {

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions options)
    : Optimizer("SGD", std::move(groups), {options.lr, options.weight_decay}), options_(options) {
  check(options.momentum >= 0 && std::isfinite(options.momentum), "SGD: momentum ", options.momentum,
        " must be finite and not negative");
  check(!options.nesterov || options.momentum > 0, "SGD: Nesterov momentum needs momentum > 0");
}

void SGD::update(const GroupHyper& group, const std::vector<size_t>& stepped, const std::vector<Tensor>& grads) {
  const SGDOptions& o = options_;
  const kernels::SGDHyper hyper{group.lr, o.momentum, group.weight_decay, o.nesterov};
  step_all<kernels::SGDStep>("SGD", stepped, grads, o.momentum > 0 ? 1 : 0, hyper);
}

}  // namespace fuselab
