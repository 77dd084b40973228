// Sums and maxima across a warp and across a block, for kernels that give each row one block
// (nvcc only).
#pragma once

namespace fuselab::kernels::cuda {

struct Add {
  template <class T> __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
  template <class T> __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};

template <class T, class Op>
__device__ T warp_reduce(T value, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// Every thread of the block gets op over the block's values. Warps reduce their lanes, then warp 0
// reduces the warps' results: a fixed order, so the result is deterministic. `identity` is op's
// neutral value; `shared` holds 32 values.
template <class T, class Op>
__device__ T block_reduce(T value, Op op, T identity, T* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  value = warp_reduce(value, op);
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  value = int(threadIdx.x) < warps ? shared[threadIdx.x] : identity;
  if (warp == 0) value = warp_reduce(value, op);
  if (threadIdx.x == 0) shared[0] = value;
  __syncthreads();
  return shared[0];
}

template <class T>
__device__ T block_sum(T value, T* shared) {
  return block_reduce(value, Add{}, T(0), shared);
}

}  // namespace fuselab::kernels::cuda
