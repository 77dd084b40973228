// The CUDA bodies of kernels/gated_linear_unit.h: one thread per output element, widened to
// compute_t<T> (float32 for bfloat16) and rounded once on store.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm.h"
#include "kernels/gated_linear_unit.h"
#include "kernels/gated_linear_unit_math.h"
#include "kernels/linear_epilogue.h"

namespace fuselab::kernels::cuda {
namespace {

// Output element i = (r, j) reads a = x[r, j] and b = x[r, n + j].
template <class Gate, class T>
__global__ void glu_forward_kernel(const T* x, T* y, int64_t count, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, count) {
    using C = compute_t<T>;
    const T* a = x + (i / n) * 2 * n + i % n;
    y[i] = T(glu_forward_value<Gate>(C(a[0]), C(a[n])));
  }
}

template <class Gate, class T>
__global__ void glu_backward_kernel(const T* x, const T* dy, T* dx, int64_t count, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, count) {
    using C = compute_t<T>;
    const int64_t at = (i / n) * 2 * n + i % n;
    C da, db;
    glu_grads<Gate>(C(x[at]), C(x[at + n]), C(dy[i]), &da, &db);
    dx[at] = T(da);
    dx[at + n] = T(db);
  }
}

}  // namespace

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void GatedLinearUnitForward<T>::cuda(KernelContext& ctx) const {
  if (rows * n == 0) return;
  use_device(ctx.device);
  with_activation(gate, [&](auto math) {
    glu_forward_kernel<decltype(math), T><<<blocks_for(rows * n), kThreads>>>(x, y, rows * n, n);
  });
  check_launch("glu_forward_kernel");
}

template <class T>
void GatedLinearUnitBackward<T>::cuda(KernelContext& ctx) const {
  if (rows * n == 0) return;
  use_device(ctx.device);
  with_activation(gate, [&](auto math) {
    glu_backward_kernel<decltype(math), T><<<blocks_for(rows * n), kThreads>>>(x, dy, dx, rows * n, n);
  });
  check_launch("glu_backward_kernel");
}

// The GEMM (with cuBLASLt's bias epilogue when there is a bias: LinearBiasActivationForward),
// then the GLU kernel: the unfused pair in one call, as a GPU has no L2 panel to keep.
template <class T>
void LinearGatedLinearUnitForward<T>::cuda(KernelContext& ctx) const {
  T* p = pre ? pre : ctx.scratch<T>(rows * 2 * n);
  if (b) {
    LinearBiasActivationForward<T>{x, w, b, Activation::None, nullptr, p, rows, in, 2 * n, nullptr}.cuda(ctx);
  } else {
    gemm<T>(false, true, rows, 2 * n, in, 1, x, in, w, in, 0, p, 2 * n, ctx.device);
  }
  GatedLinearUnitForward<T>{gate, p, y, rows, n}.cuda(ctx);
}

FUSELAB_GATED_LINEAR_UNIT_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels
