// Sums, means and reshape.
//   y = sum x:            dx = dy broadcast to x's shape
//   y = mean x:           dx = dy / n broadcast
//   y_r = sum_j x_rj:     dx_rj = dy_r
#include "autograd/checks.h"
#include "autograd/functional.h"
#include "kernels/cpu/elementwise.h"
#include "tensor/dispatch.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {
namespace {

Tensor reduce_all(const char* name, const Tensor& x, double factor) {
  check_floating(name, x);
  Tensor out = math::sum_to(x.view({-1, 1}), math::Broadcast::Scalar, {});
  if (factor != 1.0) out = math::scaled(out, factor);
  const Shape shape = x.shape();
  return record(name, {x}, out, [shape, factor](const auto& grads, const auto&) {
    return std::vector<Tensor>{full(shape, grads[0].item() * factor, grads[0].dtype(), grads[0].device())};
  });
}

Tensor reduce_last_dim(const char* name, const Tensor& x, double factor) {
  check_floating_cpu(name, x);
  check(x.dim() >= 1, name, ": needs at least one dim, got shape ", x.shape());
  const int64_t cols = x.size(-1), rows = cols ? x.numel() / cols : 0;
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  Tensor out = empty(out_shape, x.dtype());
  dispatch_floating(x.dtype(), name, [&](auto zero) {
    using T = decltype(zero);
    kernels::cpu::sum_cols<T>(x.data<T>(), rows, cols, out.data<T>());
    kernels::cpu::scale<T>(out.data<T>(), T(factor), out.data<T>(), rows);
  });
  const Shape shape = x.shape();
  return record(name, {x}, out, [shape, rows, cols, factor](const auto& grads, const auto&) {
    Tensor dx = empty(shape, grads[0].dtype());
    dispatch_floating(dx.dtype(), "sum backward", [&](auto zero) {
      using T = decltype(zero);
      const T* dy = grads[0].template data<T>();
      T* out = dx.data<T>();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = T(dy[r] * factor);
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
  const Tensor out = x.view(shape);  // shares storage; a fresh TensorImpl for the tape
  const Shape in_shape = x.shape();
  return record("reshape", {x}, out, [in_shape](const auto& grads, const auto&) {
    return std::vector<Tensor>{grads[0].view(in_shape)};
  });
}

}  // namespace fuselab
