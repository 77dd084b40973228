// Sums across a warp and across a block, for kernels that give each row one block (nvcc only).
#pragma once

namespace fuselab::kernels::cuda {

template <class T>
__device__ T warp_sum(T value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// Every thread of the block gets the block's sum. Warps add their lanes, then warp 0 adds the
// warps' sums: a fixed order, so the result is deterministic. `shared` holds 32 values.
template <class T>
__device__ T block_sum(T value, T* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  value = warp_sum(value);
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  value = threadIdx.x < warps ? shared[threadIdx.x] : T(0);
  if (warp == 0) value = warp_sum(value);
  if (threadIdx.x == 0) shared[0] = value;
  __syncthreads();
  return shared[0];
}

}  // namespace fuselab::kernels::cuda
