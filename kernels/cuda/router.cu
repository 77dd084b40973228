// The CUDA bodies of kernels/router.h: a thread per row (a row is E logits, a few dozen), and the
// losses' sums in one block.
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/router.h"

namespace fuselab::kernels::cuda {
namespace {

template <class T>
__global__ void router_forward_kernel(RouterForward<T> a) {
  FUSELAB_GRID_STRIDE_LOOP(r, a.rows) {
    route_row(a.logits + r * a.experts, a.experts, a.k, a.score, a.weights + r * a.k, a.indices + r * a.k,
              a.probs ? a.probs + r * a.experts : nullptr, a.lse ? a.lse + r : nullptr);
  }
}

template <class T>
__global__ void router_backward_kernel(RouterBackward<T> a) {
  FUSELAB_GRID_STRIDE_LOOP(r, a.rows) { route_row_backward(a, r); }
}

// One block: for each expert, its share of the copies and its summed probability, in a fixed order.
template <class T>
__global__ void router_losses_kernel(RouterLosses<T> a) {
  __shared__ T shared[32];
  const int64_t copies = a.rows * a.k;
  T balance = T(0);
  for (int64_t e = 0; e < a.experts; ++e) {
    T chose = T(0), prob = T(0);
    for (int64_t c = threadIdx.x; c < copies; c += blockDim.x) chose += a.indices[c] == e ? T(1) : T(0);
    for (int64_t r = threadIdx.x; r < a.rows; r += blockDim.x) prob += a.probs[r * a.experts + e];
    const T share = block_sum(chose, shared) / T(copies > 0 ? copies : 1);
    balance += share * block_sum(prob, shared);
    if (threadIdx.x == 0) a.shares[e] = share;
  }
  T z = T(0);
  for (int64_t r = threadIdx.x; r < a.rows; r += blockDim.x) z += a.lse[r] * a.lse[r];
  z = block_sum(z, shared);
  if (threadIdx.x == 0) {
    *a.balance = a.rows > 0 ? T(a.experts) * balance / T(a.rows) : T(0);
    *a.z = a.rows > 0 ? z / T(a.rows) : T(0);
  }
}

}  // namespace
}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void RouterForward<T>::cuda(KernelContext& ctx) const {
  if (rows == 0) return;
  use_device(ctx.device);
  router_forward_kernel<T><<<blocks_for(rows), kThreads>>>(*this);
  check_launch("router_forward_kernel");
}

template <class T>
void RouterBackward<T>::cuda(KernelContext& ctx) const {
  if (rows == 0) return;
  use_device(ctx.device);
  router_backward_kernel<T><<<blocks_for(rows), kThreads>>>(*this);
  check_launch("router_backward_kernel");
}

template <class T>
void RouterLosses<T>::cuda(KernelContext& ctx) const {
  use_device(ctx.device);
  router_losses_kernel<T><<<1, kThreads>>>(*this);
  check_launch("router_losses_kernel");
}

FUSELAB_ROUTER_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels
