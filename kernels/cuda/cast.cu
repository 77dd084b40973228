#include "kernels/cuda/cast.h"

#include "kernels/cuda/cuda_check.h"

namespace fuselab::kernels::cuda {
namespace {

// Through float or double: To(From) for bfloat16 is its float conversion either way.
template <class From, class To>
__global__ void cast_kernel(const From* x, To* y, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) y[i] = To(compute_t<From>(x[i]));
}

}  // namespace

template <class From, class To>
void cast(const From* x, To* y, int64_t n, int device) {
  if (n == 0) return;
  use_device(device);
  cast_kernel<From, To><<<blocks_for(n), kThreads>>>(x, y, n);
  check_launch("cast_kernel");
}

FUSELAB_CUDA_CAST_INSTANTIATE

}  // namespace fuselab::kernels::cuda
