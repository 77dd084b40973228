#include "optim/sgd.h"


namespace fuselab {

SGD::SGD(std::vector<Tensor> params, SGDOptions options) : Optimizer(std::move(params)), options_(options) {
  check(options.lr >= 0 && options.momentum >= 0 && options.weight_decay >= 0, "SGD: lr ", options.lr,
        ", momentum ", options.momentum, " and weight_decay ", options.weight_decay, " must not be negative");
  check(!options.nesterov || options.momentum > 0, "SGD: Nesterov momentum needs momentum > 0");
  lr_ = options.lr;
}

void SGD::update(const std::vector<size_t>& stepped, const std::vector<Tensor>& grads) {
  const SGDOptions& o = options_;
  const kernels::SGDHyper hyper{lr_, o.momentum, o.weight_decay, o.nesterov};
  step_all<kernels::SGDStep>("SGD", stepped, grads, o.momentum > 0 ? 1 : 0, hyper);
}

}  // namespace fuselab
