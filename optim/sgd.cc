#include "optim/sgd.h"

#include "tensor/dispatch.h"

namespace fuselab {

SGD::SGD(std::vector<Tensor> params, SGDOptions options) : Optimizer(std::move(params)), options_(options) {
  check(options.lr >= 0 && options.momentum >= 0 && options.weight_decay >= 0, "SGD: lr ", options.lr,
        ", momentum ", options.momentum, " and weight_decay ", options.weight_decay, " must not be negative");
  check(!options.nesterov || options.momentum > 0, "SGD: Nesterov momentum needs momentum > 0");
  lr_ = options.lr;
}

void SGD::step() {
  const SGDOptions& o = options_;
  for (size_t k = 0; k < params_.size(); ++k) {
    const Tensor grad = params_[k].grad();
    if (!grad.defined()) continue;
    dispatch_floating(params_[k].dtype(), "SGD", [&](auto zero) {
      using T = decltype(zero);
      T* p = params_[k].data<T>();
      const T* g = grad.data<T>();
      T* b = o.momentum > 0 ? buffer(0, k).data<T>() : nullptr;
      for (int64_t i = 0; i < params_[k].numel(); ++i) {
        T d = g[i] + T(o.weight_decay) * p[i];
        if (b) {
          b[i] = T(o.momentum) * b[i] + d;  // b starts at 0, so b = g on the first step
          d = o.nesterov ? d + T(o.momentum) * b[i] : b[i];
        }
        p[i] -= T(lr_) * d;
      }
    });
  }
  ++steps_;
}

}  // namespace fuselab
