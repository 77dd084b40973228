// The CUDA bodies of kernels/moe_combine.h: sums in compute_t<T> (float32 for bfloat16), rounded
// once on store.
#include "kernels/moe_combine.h"

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"

namespace fuselab::kernels::cuda {
namespace {

template <class T>
__global__ void moe_combine_forward_kernel(const T* y, const T* weights, const int64_t* slots, T* out, int64_t n,
                                           int64_t k, int64_t dim) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) {
    using C = compute_t<T>;
    const int64_t r = i / dim, c = i % dim;
    C sum = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t slot = slots[r * k + j];
      if (slot >= 0) sum += (weights ? C(weights[r * k + j]) : C(1)) * C(y[slot * dim + c]);
    }
    out[i] = T(sum);
  }
}

// Element (r, j, c) of the copies: dy's row slot[r, j].
template <class T>
__global__ void moe_combine_dy_kernel(const T* dout, const T* weights, const int64_t* slots, T* dy, int64_t n,
                                      int64_t k, int64_t dim) {
  FUSELAB_GRID_STRIDE_LOOP(i, n) {
    const int64_t copy = i / dim, c = i % dim;
    using C = compute_t<T>;
    if (slots[copy] >= 0) dy[slots[copy] * dim + c] = T(C(weights[copy]) * C(dout[(copy / k) * dim + c]));
  }
}

// Block (r, j): the dot product of dout[r] and y[slot[r, j]].
template <class T>
__global__ void moe_combine_dweights_kernel(const T* dout, const T* y, const int64_t* slots, T* dweights, int64_t k,
                                            int64_t dim) {
  using C = compute_t<T>;
  __shared__ C shared[32];
  const int64_t copy = blockIdx.x;
  const T* d = dout + (copy / k) * dim;
  const T* from = y + slots[copy] * dim;
  C partial = 0;
  if (slots[copy] >= 0) {  // uniform across the block: every thread reaches block_sum
    for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) partial += C(d[c]) * C(from[c]);
  }
  const C total = block_sum(partial, shared);
  if (threadIdx.x == 0) dweights[copy] = T(total);
}

}  // namespace
}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void MoECombineForward<T>::cuda(KernelContext& ctx) const {
  if (rows * dim == 0) return;
  use_device(ctx.device);
  moe_combine_forward_kernel<T><<<blocks_for(rows * dim), kThreads>>>(y, weights, slots, out, rows * dim, k, dim);
  check_launch("moe_combine_forward_kernel");
}

template <class T>
void MoECombineBackward<T>::cuda(KernelContext& ctx) const {
  if (rows * k == 0) return;
  use_device(ctx.device);
  if (dim > 0) {
    moe_combine_dy_kernel<T><<<blocks_for(rows * k * dim), kThreads>>>(dout, weights, slots, dy, rows * k * dim, k, dim);
    check_launch("moe_combine_dy_kernel");
  }
  moe_combine_dweights_kernel<T><<<unsigned(rows * k), kThreads>>>(dout, y, slots, dweights, k, dim);
  check_launch("moe_combine_dweights_kernel");
}

FUSELAB_MOE_COMBINE_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels
