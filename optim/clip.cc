#include "optim/clip.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "kernels/elementwise.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  check(max_norm > 0, "clip_grad_norm: max_norm must be positive, got ", max_norm);
  // Each grad's sum of squares into its slot of a float64 tensor on its device, read back in one
  // copy per device (on CUDA, one wait instead of one per grad).
  std::vector<std::pair<Device, std::vector<Tensor>>> by_device;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    auto same = std::find_if(by_device.begin(), by_device.end(), [&](const auto& d) { return d.first == g.device(); });
    if (same == by_device.end()) same = by_device.emplace(by_device.end(), g.device(), std::vector<Tensor>{});
    same->second.push_back(g);
  }
  double sum_sq = 0;
  for (const auto& [device, grads] : by_device) {
    Tensor sums = empty({int64_t(grads.size())}, DType::Float64, device);
    for (size_t i = 0; i < grads.size(); ++i) {
      const Tensor& g = grads[i];
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
