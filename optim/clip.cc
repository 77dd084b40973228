#include "optim/clip.h"

#include <cmath>

#include "tensor/dispatch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  check(max_norm > 0, "clip_grad_norm: max_norm must be positive, got ", max_norm);
  double sum_sq = 0;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    dispatch_floating(g.dtype(), "clip_grad_norm", [&](auto zero) {
      using T = decltype(zero);
      const T* d = g.data<T>();
      for (int64_t i = 0; i < g.numel(); ++i) sum_sq += double(d[i]) * double(d[i]);
    });
  }
  const double norm = std::sqrt(sum_sq);
  if (norm > max_norm) {
    const double factor = max_norm / (norm + 1e-6);
    for (const Tensor& p : params) {
      Tensor g = p.grad();
      if (g.defined()) g.copy_(math::scaled(g, factor));
    }
  }
  return norm;
}

}  // namespace fuselab
