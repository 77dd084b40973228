// matmul and transpose.
//   C = A B:  dA = dC B^T,  dB = A^T dC  (per batch for 3-D)
#include "autograd/checks.h"
#include "autograd/functional.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "tensor/dispatch.h"
#include "tensor/factories.h"

namespace fuselab {
namespace {

// out[b] = op(a[b]) op(b[b]) for each batch; a and b are [batch, ., .] (batch 1 for 2-D).
Tensor batched_gemm(const Tensor& a, bool ta, const Tensor& b, bool tb, int64_t batch) {
  const int64_t ar = a.size(-2), ac = a.size(-1), br = b.size(-2), bc = b.size(-1);
  const int64_t m = ta ? ac : ar, k = ta ? ar : ac, n = tb ? br : bc;
  Tensor out = empty(a.dim() == 3 ? Shape{batch, m, n} : Shape{m, n}, a.dtype());
  dispatch_floating(a.dtype(), "matmul", [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < batch; ++i) {
      kernels::cpu::gemm<T>(ta, tb, m, n, k, T(1), a.data<T>() + i * ar * ac, ac, b.data<T>() + i * br * bc, bc,
                            T(0), out.data<T>() + i * m * n, n);
    }
  });
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_floating_cpu("matmul", a);
  check_floating_cpu("matmul", b);
  check_same_dtype_device("matmul", a, b);
  const bool shapes_ok = (a.dim() == 2 && b.dim() == 2) ||
                         (a.dim() == 3 && b.dim() == 3 && a.size(0) == b.size(0));
  check(shapes_ok && a.size(-1) == b.size(-2), "matmul: shapes ", a.shape(), " and ", b.shape(),
        " do not agree (need [m, k] x [k, n] or [B, m, k] x [B, k, n])");
  const int64_t batch = a.dim() == 3 ? a.size(0) : 1;
  Tensor out = batched_gemm(a, false, b, false, batch);
  return record("matmul", {a, b}, out, [a, b, batch](const auto& grads, const auto& needs) {
    const Tensor& dc = grads[0];
    return std::vector<Tensor>{needs[0] ? batched_gemm(dc, false, b, true, batch) : Tensor(),
                               needs[1] ? batched_gemm(a, true, dc, false, batch) : Tensor()};
  });
}

namespace {
Tensor transposed(const Tensor& x) {
  const int64_t rows = x.size(-2), cols = x.size(-1), plane = rows * cols;
  const int64_t batch = plane ? x.numel() / plane : 0;
  Shape shape = x.shape();
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  Tensor out = empty(shape, x.dtype());
  dispatch_floating(x.dtype(), "transpose", [&](auto zero) {
    using T = decltype(zero);
    kernels::cpu::transpose<T>(x.data<T>(), out.data<T>(), batch, rows, cols);
  });
  return out;
}
}  // namespace

Tensor transpose(const Tensor& x) {
  check_floating_cpu("transpose", x);
  check(x.dim() >= 2, "transpose: needs at least 2 dims, got shape ", x.shape());
  return record("transpose", {x}, transposed(x), [](const auto& grads, const auto&) {
    return std::vector<Tensor>{transposed(grads[0])};
  });
}

}  // namespace fuselab
