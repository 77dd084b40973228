#include "optim/sgd.h"

#include "tensor/dispatch.h"

namespace fuselab {

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : params_(std::move(params)), momentum_buffers_(params_.size()), options_(options) {
  check(options.lr >= 0 && options.momentum >= 0 && options.weight_decay >= 0, "SGD: lr ", options.lr,
        ", momentum ", options.momentum, " and weight_decay ", options.weight_decay, " must not be negative");
  check(!options.nesterov || options.momentum > 0, "SGD: Nesterov momentum needs momentum > 0");
  for (const Tensor& p : params_) {
    check(p.defined() && p.is_leaf() && p.device().is_cpu(), "SGD: parameters must be CPU leaf tensors");
  }
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
      const bool first = !momentum_buffers_[k].defined();
      if (o.momentum > 0 && first) momentum_buffers_[k] = grad.clone();
      T* b = o.momentum > 0 ? momentum_buffers_[k].data<T>() : nullptr;
      for (int64_t i = 0; i < params_[k].numel(); ++i) {
        T d = g[i] + T(o.weight_decay) * p[i];
        if (b) {
          b[i] = first ? d : T(o.momentum) * b[i] + d;
          d = o.nesterov ? d + T(o.momentum) * b[i] : b[i];
        }
        p[i] -= T(o.lr) * d;
      }
    });
  }
}

void SGD::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

}  // namespace fuselab
