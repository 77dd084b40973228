// Sums, means and reshape.
//   y = sum x:            dx = dy at every element
//   y = mean x:           dx = dy / n at every element
//   y_r = sum_j x_rj:     dx_rj = dy_r
#include "autograd/checks.h"
#include "autograd/functional.h"
#include "kernels/elementwise.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {
namespace {

Tensor reduce_all(const char* name, const Tensor& x, double factor) {
  check_floating(name, x);
  Tensor out = math::sum_to(x.view({-1, 1}), math::Broadcast::Scalar, {});
  if (factor != 1.0) out = math::scaled(out, factor);
  // dx is dy * factor at every element: one fill of x's shape, reading dy on its device.
  const Shape shape = x.shape();
  return record(name, {x}, out, [name, shape, factor](const auto& grads, const auto&) {
    const Tensor& dy = grads[0];
    Tensor dx = empty(shape, dy.dtype(), dy.device());
    launch_floating<WithBFloat16::Yes>(name, dy, [&](auto zero) {
      using T = decltype(zero);
      return kernels::Fill<T>{dy.template ptr<T>(), compute_t<T>(factor), dx.template ptr<T>(), dx.numel()};
    });
    return std::vector<Tensor>{dx};
  });
}

Tensor reduce_last_dim(const char* name, const Tensor& x, double factor) {
  check_floating(name, x);
  check(x.dim() >= 1, name, ": needs at least one dim, got shape ", x.shape());
  const int64_t cols = x.size(-1), rows = cols ? x.numel() / cols : 0;
  Tensor out = empty(Shape(x.shape().begin(), x.shape().end() - 1), x.dtype(), x.device());
  launch_floating(name, x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::SumCols<T>{x.ptr<T>(), rows, cols, T(factor), out.ptr<T>()};
  });
  const Shape shape = x.shape();
  return record(name, {x}, out, [shape, rows, cols, factor](const auto& grads, const auto&) {
    const Tensor& dy = grads[0];
    Tensor dx = empty(shape, dy.dtype(), dy.device());
    launch_floating("sum backward", dy, [&](auto zero) {
      using T = decltype(zero);
      return kernels::ExpandCols<T>{dy.template ptr<T>(), rows, cols, T(factor), dx.template ptr<T>()};
    });
    return std::vector<Tensor>{dx};
  });
}

}  // namespace

Tensor sum(const Tensor& x) { return reduce_all("sum", x, 1.0); }
Tensor mean(const Tensor& x) { return reduce_all("mean", x, 1.0 / double(x.numel() ? x.numel() : 1)); }
Tensor sum_last_dim(const Tensor& x) { return reduce_last_dim("sum_last_dim", x, 1.0); }
Tensor mean_last_dim(const Tensor& x) {
  return reduce_last_dim("mean_last_dim", x, x.dim() && x.size(-1) ? 1.0 / double(x.size(-1)) : 1.0);
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  check(x.defined(), "reshape: undefined tensor argument");
  const Tensor out = x.view(shape, "reshape");  // shares storage; a fresh TensorImpl for the tape
  const Shape in_shape = x.shape();
  return record("reshape", {x}, out, [in_shape](const auto& grads, const auto&) {
    return std::vector<Tensor>{grads[0].view(in_shape)};
  });
}

}  // namespace fuselab
