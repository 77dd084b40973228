#include "optim/adamw.h"

#include "kernels/cpu/optimizer_steps.h"
#include "kernels/cuda/optimizer_steps.h"
#include "tensor/dispatch.h"

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
  dispatch_floating_on_device(
      "AdamW", weights(stepped[0]),
      [&](auto zero) {
        using T = decltype(zero);
        for (size_t i = 0; i < stepped.size(); ++i) {
          const size_t k = stepped[i];
          kernels::cpu::adamw_step(weights(k).data<T>(), grads[i].data<T>(), buffer(0, k).data<T>(),
                                   buffer(1, k).data<T>(), weights(k).numel(), hyper);
        }
      },
      [&](auto zero) {  // every parameter in one launch
        using T = decltype(zero);
        std::vector<kernels::cuda::ParamBuffers<T>> buffers;
        for (size_t i = 0; i < stepped.size(); ++i) {
          const size_t k = stepped[i];
          buffers.push_back({weights(k).cuda_data<T>(), grads[i].cuda_data<T>(),
                             buffer(0, k).cuda_data<T>(), buffer(1, k).cuda_data<T>(), weights(k).numel()});
        }
        kernels::cuda::adamw_step(buffers, hyper, weights(stepped[0]).device().index);
      });
}

}  // namespace fuselab
