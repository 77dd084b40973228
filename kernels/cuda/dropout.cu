// The CUDA body of kernels/dropout.h.
#include "kernels/dropout.h"

#include "kernels/cuda/cuda_check.h"
#include "kernels/dropout_mask.h"

namespace fuselab::kernels::cuda {
namespace {

template <class T>
__global__ void dropout_mask_kernel(uint64_t seed, double p, T* mask, int64_t n) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) mask[i] = dropout_scaled_mask<T>(seed, uint64_t(i), p);
}

}  // namespace

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void DropoutMask<T>::cuda(KernelContext& ctx) const {
  if (n == 0) return;
  use_device(ctx.device);
  dropout_mask_kernel<T><<<blocks_for(n), kThreads>>>(seed, p, mask, n);
  check_launch("dropout_mask_kernel");
}

FUSELAB_DROPOUT_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels
