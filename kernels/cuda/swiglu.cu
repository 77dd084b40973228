// The CUDA bodies of kernels/swiglu.h: one thread per output element.
#include "kernels/swiglu.h"

#include "kernels/cuda/cuda_check.h"
#include "kernels/swiglu_math.h"

namespace fuselab::kernels::cuda {
namespace {

// Output element i = (r, j) reads a = x[r, j] and b = x[r, n + j].
template <class T>
__global__ void swiglu_forward_kernel(const T* x, T* y, int64_t count, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, count) {
    const T* a = x + (i / n) * 2 * n + i % n;
    y[i] = swiglu_forward_value(a[0], a[n]);
  }
}

template <class T>
__global__ void swiglu_backward_kernel(const T* x, const T* dy, T* dx, int64_t count, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, count) {
    const int64_t at = (i / n) * 2 * n + i % n;
    swiglu_grads(x[at], x[at + n], dy[i], &dx[at], &dx[at + n]);
  }
}

}  // namespace

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void SwiGLUForward<T>::cuda(KernelContext& ctx) const {
  if (rows * n == 0) return;
  use_device(ctx.device);
  swiglu_forward_kernel<T><<<blocks_for(rows * n), kThreads>>>(x, y, rows * n, n);
  check_launch("swiglu_forward_kernel");
}

template <class T>
void SwiGLUBackward<T>::cuda(KernelContext& ctx) const {
  if (rows * n == 0) return;
  use_device(ctx.device);
  swiglu_backward_kernel<T><<<blocks_for(rows * n), kThreads>>>(x, dy, dx, rows * n, n);
  check_launch("swiglu_backward_kernel");
}

FUSELAB_SWIGLU_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels
