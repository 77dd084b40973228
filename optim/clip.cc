#include "optim/clip.h"

#include <cmath>

#include "kernels/elementwise.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  check(max_norm > 0, "clip_grad_norm: max_norm must be positive, got ", max_norm);
  double sum_sq = 0;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    double grad_sum_sq = 0;
    launch_floating<WithBFloat16::Yes>("clip_grad_norm", g, [&](auto zero) {
      using T = decltype(zero);
      return kernels::SumSquares<T>{g.ptr<T>(), g.numel(), &grad_sum_sq};
    });
    sum_sq += grad_sum_sq;
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
