#include "tensor/tensor_math.h"

#include "kernels/cpu/gemm.h"
#include "kernels/cuda/device_api.h"
#include "tensor/dispatch.h"
#include "tensor/factories.h"

namespace fuselab::math {

namespace cpu = kernels::cpu;

int64_t rows_of(const Tensor& x) {
  const int64_t cols = x.dim() ? x.size(-1) : 1;
  return cols ? x.numel() / cols : 0;
}

Broadcast broadcast_kind(const char* op, const Tensor& a, const Tensor& b) {
  check(a.dtype() == b.dtype() && a.device() == b.device(), op, ": operands ", a.shape(), " ", a.dtype(),
        " on ", a.device(), " and ", b.shape(), " ", b.dtype(), " on ", b.device(),
        " must have the same dtype and device");
  if (b.shape() == a.shape()) return Broadcast::None;
  if (b.numel() == 1 && b.dim() <= 1) return Broadcast::Scalar;
  if (b.dim() == 1 && a.dim() >= 1 && b.size(0) == a.size(-1)) return Broadcast::Row;
  fail(op, ": cannot broadcast shape ", b.shape(), " to ", a.shape(),
       " (same shape, a vector over the last dim, or a scalar)");
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const Broadcast broadcast = broadcast_kind("binary", a, b);
  Tensor out = empty_like(a);
  if (a.device().is_cuda()) {
    check(op == BinaryOp::Add && broadcast == Broadcast::None && a.dtype() == DType::Float32,
          "binary op on ", a.device(), ": only same-shape float32 add runs on CUDA so far");
    kernels::cuda::add_f32(a.data<float>(), b.data<float>(), out.data<float>(), a.numel(), a.device().index);
    return out;
  }
  dispatch_floating(a.dtype(), "binary", [&](auto zero) {
    using T = decltype(zero);
    cpu::binary<T>(op, a.data<T>(), b.data<T>(), out.data<T>(), rows_of(a), a.dim() ? a.size(-1) : 1,
                   broadcast);
  });
  return out;
}

Tensor scaled(const Tensor& x, double alpha) {
  Tensor out = empty_like(x);
  dispatch_floating(x.dtype(), "scale", [&](auto zero) {
    using T = decltype(zero);
    cpu::scale<T>(x.data<T>(), T(alpha), out.data<T>(), x.numel());
  });
  return out;
}

void add_(Tensor& y, const Tensor& x, double alpha) {
  check(x.shape() == y.shape() && x.dtype() == y.dtype(), "add_: ", x.shape(), " ", x.dtype(), " into ",
        y.shape(), " ", y.dtype());
  if (y.device().is_cuda()) {
    check(alpha == 1 && y.dtype() == DType::Float32, "add_ on ", y.device(), ": only float32 y += x so far");
    kernels::cuda::add_f32(y.data<float>(), x.data<float>(), y.data<float>(), y.numel(), y.device().index);
    return;
  }
  dispatch_floating(y.dtype(), "add_", [&](auto zero) {
    using T = decltype(zero);
    cpu::axpy<T>(T(alpha), x.data<T>(), y.data<T>(), y.numel());
  });
}

Tensor sum_to(const Tensor& grad, Broadcast broadcast, const Shape& shape) {
  if (broadcast == Broadcast::None) return grad;
  Tensor out = empty(shape, grad.dtype());
  dispatch_floating(grad.dtype(), "sum_to", [&](auto zero) {
    using T = decltype(zero);
    if (broadcast == Broadcast::Scalar) {
      out.data<T>()[0] = cpu::sum_all<T>(grad.data<T>(), grad.numel());
    } else {
      cpu::sum_rows<T>(grad.data<T>(), rows_of(grad), grad.size(-1), out.data<T>(), false);
    }
  });
  return out;
}

Tensor activation(Activation act, const Tensor& x) {
  Tensor y = empty_like(x);
  dispatch_floating(x.dtype(), cpu::activation_name(act), [&](auto zero) {
    using T = decltype(zero);
    cpu::activation_forward<T>(act, x.data<T>(), y.data<T>(), x.numel());
  });
  return y;
}

Tensor activation_backward(Activation act, const Tensor& x, const Tensor& dy) {
  Tensor dx = empty_like(x);
  dispatch_floating(x.dtype(), cpu::activation_name(act), [&](auto zero) {
    using T = decltype(zero);
    cpu::activation_backward<T>(act, x.data<T>(), dy.data<T>(), dx.data<T>(), x.numel());
  });
  return dx;
}

Tensor matmul(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, const Tensor& addend) {
  const int64_t batch = a.dim() == 3 ? a.size(0) : 1;
  const int64_t ar = a.size(-2), ac = a.size(-1), br = b.size(-2), bc = b.size(-1);
  const int64_t m = transpose_a ? ac : ar, k = transpose_a ? ar : ac, n = transpose_b ? br : bc;
  const Shape shape = a.dim() == 3 ? Shape{batch, m, n} : Shape{m, n};
  check(!addend.defined() || addend.shape() == shape, "matmul: addend of shape ",
        addend.defined() ? addend.shape() : Shape{}, " for a product of shape ", shape);
  Tensor out = addend.defined() ? addend.clone() : empty(shape, a.dtype(), a.device());
  dispatch_floating(a.dtype(), "matmul", [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < batch; ++i) {
      cpu::gemm<T>(transpose_a, transpose_b, m, n, k, T(1), a.data<T>() + i * ar * ac, ac, b.data<T>() + i * br * bc,
                   bc, T(addend.defined() ? 1 : 0), out.data<T>() + i * m * n, n);
    }
  });
  return out;
}

}  // namespace fuselab::math
