// matmul and transpose.
//   C = A B:  dA = dC B^T,  dB = A^T dC  (per batch for 3-D)
#include "autograd/checks.h"
#include "autograd/functional.h"
#include "kernels/elementwise.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_floating("matmul", a);
  check_floating("matmul", b);
  check_same_dtype_device("matmul", a, b);
  const bool shapes_ok = (a.dim() == 2 && b.dim() == 2) ||
                         (a.dim() == 3 && b.dim() == 3 && a.size(0) == b.size(0));
  check(shapes_ok && a.size(-1) == b.size(-2), "matmul: shapes ", a.shape(), " and ", b.shape(),
        " do not agree (need [m, k] x [k, n] or [B, m, k] x [B, k, n])");
  return record("matmul", {a, b}, math::matmul(a, false, b, false), [a, b](const auto& grads, const auto& needs) {
    const Tensor& dc = grads[0];
    return std::vector<Tensor>{needs[0] ? math::matmul(dc, false, b, true) : Tensor(),
                               needs[1] ? math::matmul(a, true, dc, false) : Tensor()};
  });
}

namespace {
Tensor transposed(const Tensor& x) {
  const int64_t rows = x.size(-2), cols = x.size(-1), plane = rows * cols;
  const int64_t batch = plane ? x.numel() / plane : 0;
  Shape shape = x.shape();
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  Tensor out = empty(shape, x.dtype(), x.device());
  launch_floating("transpose", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::Transpose<T>{x.ptr<T>(), out.ptr<T>(), batch, rows, cols};
  });
  return out;
}
}  // namespace

Tensor transpose(const Tensor& x) {
  check_floating("transpose", x);
  check(x.dim() >= 2, "transpose: needs at least 2 dims, got shape ", x.shape());
  return record("transpose", {x}, transposed(x), [](const auto& grads, const auto&) {
    return std::vector<Tensor>{transposed(grads[0])};
  });
}

}  // namespace fuselab
