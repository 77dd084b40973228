// The CUDA body of kernels/rotary.h: one thread per element of qkv; a thread in a query or key head
// reads its element and its pair's partner, one in a value head copies.
#include "kernels/rotary.h"

#include "kernels/cuda/cuda_check.h"

namespace fuselab::kernels::cuda {
namespace {

template <class T>
__global__ void apply_rotary_kernel(RotaryShape s, const T* x, T* y, const compute_t<T>* cos,
                                    const compute_t<T>* sin, compute_t<T> sign) {
  using C = compute_t<T>;
  const int64_t d = s.head_dim, half = d / 2;
  FUSELAB_GRID_STRIDE_LOOP(i, s.rows * s.row) {
    const int64_t col = i % s.row;
    if (col >= s.rotated_heads * d) {
      y[i] = x[i];
      continue;
    }
    const int64_t e = col % d, pair = e % half, first = i - e + pair;  // first: x1's index
    const int64_t table = i / s.row % s.tokens * half + pair;
    C y1, y2;
    rotate_pair(C(x[first]), C(x[first + half]), cos[table], sign * sin[table], &y1, &y2);
    y[i] = T(e < half ? y1 : y2);
  }
}

}  // namespace
}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void ApplyRotary<T>::cuda(KernelContext& ctx) const {
  const int64_t n = s.rows * s.row;
  if (n == 0) return;
  use_device(ctx.device);
  apply_rotary_kernel<T><<<blocks_for(n), kThreads>>>(s, x, y, cos, sin, compute_t<T>(inverse ? -1 : 1));
  check_launch("apply_rotary_kernel");
}

FUSELAB_ROTARY_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels
