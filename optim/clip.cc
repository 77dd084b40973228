#include "optim/clip.h"

#include <cmath>

#include "kernels/cpu/elementwise.h"
#include "tensor/dispatch.h"

namespace fuselab {

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  check(max_norm > 0, "clip_grad_norm: max_norm must be positive, got ", max_norm);
  double sum_sq = 0;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    dispatch_floating(g.dtype(), "clip_grad_norm", [&](auto zero) {
      using T = decltype(zero);
      sum_sq += kernels::cpu::sum_squares(g.data<T>(), g.numel());
    });
  }
  const double norm = std::sqrt(sum_sq);
  if (norm > max_norm) {
    const double factor = max_norm / (norm + 1e-6);
    for (const Tensor& p : params) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      dispatch_floating(g.dtype(), "clip_grad_norm", [&](auto zero) {
        using T = decltype(zero);
        kernels::cpu::scale(g.data<T>(), T(factor), g.data<T>(), g.numel());  // in place
      });
    }
  }
  return norm;
}

}  // namespace fuselab
