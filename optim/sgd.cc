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

void SGD::step() {
  const SGDOptions& o = options_;
  const kernels::SGDHyper hyper{lr_, o.momentum, o.weight_decay, o.nesterov};
  const bool momentum = o.momentum > 0;
  const std::vector<size_t> stepped = params_with_grad();
  if (!stepped.empty()) {
    dispatch_floating_on_device(
        "SGD", params_[stepped[0]],
        [&](auto zero) {
          using T = decltype(zero);
          for (size_t k : stepped) {
            kernels::cpu::sgd_step(params_[k].data<T>(), params_[k].grad().data<T>(),
                                   momentum ? buffer(0, k).data<T>() : nullptr, params_[k].numel(), hyper);
          }
        },
        [&](auto zero) {  // every parameter in one launch
          using T = decltype(zero);
          std::vector<kernels::cuda::ParamBuffers<T>> buffers;
          for (size_t k : stepped) {
            buffers.push_back({params_[k].cuda_data<T>(), params_[k].grad().cuda_data<T>(),
                               momentum ? buffer(0, k).cuda_data<T>() : nullptr, nullptr, params_[k].numel()});
          }
          kernels::cuda::sgd_step(buffers, hyper, params_[stepped[0]].device().index);
        });
  }
  ++steps_;
}

}  // namespace fuselab
