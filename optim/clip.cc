#include "optim/clip.h"

#include <cmath>

#include "kernels/elementwise.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  check(max_norm > 0, "clip_grad_norm: max_norm must be positive, got ", max_norm);
  // Each grad's sum of squares into its slot of a float64 tensor on the grads' device, read back
  // in one copy per device (on CUDA, one wait instead of one per grad).
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  double sum_sq = 0;
  std::vector<bool> done(grads.size(), false);
  for (size_t first = 0; first < grads.size(); ++first) {
    if (done[first]) continue;
    const Device device = grads[first].device();
    std::vector<size_t> on_device;
    for (size_t k = first; k < grads.size(); ++k) {
      if (!done[k] && grads[k].device() == device) on_device.push_back(k), done[k] = true;
    }
    Tensor sums = empty({int64_t(on_device.size())}, DType::Float64, device);
    for (size_t i = 0; i < on_device.size(); ++i) {
      const Tensor& g = grads[on_device[i]];
      launch_floating<WithBFloat16::Yes>("clip_grad_norm", g, [&](auto zero) {
        using T = decltype(zero);
        return kernels::SumSquares<T>{g.ptr<T>(), g.numel(), sums.ptr<double>() + i};
      });
    }
    for (double s : sums.to_vector<double>()) sum_sq += s;
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
