#include "optim/sgd.h"

#include "kernels/cpu/optimizer_steps.h"
#include "kernels/cuda/optimizer_steps.h"
#include "tensor/dispatch.h"

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
  const bool momentum = o.momentum > 0;
  dispatch_floating_on_device(
      "SGD", weights(stepped[0]),
      [&](auto zero) {
        using T = decltype(zero);
        for (size_t i = 0; i < stepped.size(); ++i) {
          const size_t k = stepped[i];
          kernels::cpu::sgd_step(weights(k).data<T>(), grads[i].data<T>(),
                                 momentum ? buffer(0, k).data<T>() : nullptr, weights(k).numel(), hyper);
        }
      },
      [&](auto zero) {  // every parameter in one launch
        using T = decltype(zero);
        std::vector<kernels::cuda::ParamBuffers<T>> buffers;
        for (size_t i = 0; i < stepped.size(); ++i) {
          const size_t k = stepped[i];
          buffers.push_back({weights(k).cuda_data<T>(), grads[i].cuda_data<T>(),
                             momentum ? buffer(0, k).cuda_data<T>() : nullptr, nullptr, weights(k).numel()});
        }
        kernels::cuda::sgd_step(buffers, hyper, weights(stepped[0]).device().index);
      });
}

}  // namespace fuselab
