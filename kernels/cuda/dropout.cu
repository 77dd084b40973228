#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dropout.h"
#include "kernels/dropout_mask.h"

namespace fuselab::kernels::cuda {
namespace {

template <class T>
__global__ void dropout_mask_kernel(uint64_t seed, double p, T* mask, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) mask[i] = dropout_scaled_mask<T>(seed, uint64_t(i), p);
}

}  // namespace

template <class T>
void dropout_mask(uint64_t seed, double p, T* mask, int64_t n, int device) {
  if (n == 0) return;
  use_device(device);
  dropout_mask_kernel<T><<<blocks_for(n), kThreads>>>(seed, p, mask, n);
  check_launch("dropout_mask_kernel");
}

FUSELAB_CUDA_DROPOUT_INSTANTIATE(float)
FUSELAB_CUDA_DROPOUT_INSTANTIATE(double)

}  // namespace fuselab::kernels::cuda
