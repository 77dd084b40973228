#include "optim/clip.h"

#include <cmath>

#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/optimizer_steps.h"
#include "tensor/dispatch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  check(max_norm > 0, "clip_grad_norm: max_norm must be positive, got ", max_norm);
  double sum_sq = 0;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    dispatch_floating_on_device<WithBFloat16::Yes>(
        "clip_grad_norm", g,
        [&](auto zero) {
          using T = decltype(zero);
          sum_sq += kernels::cpu::sum_squares(g.data<T>(), g.numel());
        },
        [&](auto zero) {
          using T = decltype(zero);
          sum_sq += kernels::cuda::sum_squares(g.cuda_data<T>(), g.numel(), g.device().index);
        });
  }
  const double norm = std::sqrt(sum_sq);
  if (norm > max_norm) {
    const double factor = max_norm / (norm + 1e-6);
    for (const Tensor& p : params) {
      Tensor g = p.grad();
      if (g.defined()) math::scale_into(g, g, factor);  // in place
    }
  }
  return norm;
}

}  // namespace fuselab
