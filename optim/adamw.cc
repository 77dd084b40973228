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

void AdamW::step() {
  const AdamWOptions& o = options_;
  const kernels::AdamWHyper hyper{lr_, o.beta1, o.beta2, o.eps, o.weight_decay, steps_ + 1};
  const std::vector<size_t> stepped = params_with_grad();
  if (!stepped.empty()) {
    dispatch_floating_on_device(
        "AdamW", params_[stepped[0]],
        [&](auto zero) {
          using T = decltype(zero);
          for (size_t k : stepped) {
            kernels::cpu::adamw_step(params_[k].data<T>(), params_[k].grad().data<T>(), buffer(0, k).data<T>(),
                                     buffer(1, k).data<T>(), params_[k].numel(), hyper);
          }
        },
        [&](auto zero) {  // every parameter in one launch
          using T = decltype(zero);
          std::vector<kernels::cuda::ParamBuffers<T>> buffers;
          for (size_t k : stepped) {
            buffers.push_back({params_[k].cuda_data<T>(), params_[k].grad().cuda_data<T>(),
                               buffer(0, k).cuda_data<T>(), buffer(1, k).cuda_data<T>(), params_[k].numel()});
          }
          kernels::cuda::adamw_step(buffers, hyper, params_[stepped[0]].device().index);
        });
  }
  ++steps_;
}

}  // namespace fuselab
