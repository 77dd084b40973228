// Checked CUDA calls and launch shapes for the .cu files in kernels/cuda (nvcc only).
//
// Kernels run asynchronously on the device's legacy default stream, so host copies (cudaMemcpy)
// wait for them. A failing kernel shows up at the next synchronizing call; FUSELAB_CUDA_SYNC=1
// synchronizes after every launch so the error names the kernel that caused it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "runtime/settings.h"

namespace fuselab::kernels::cuda {

inline void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(status));
}

inline void use_device(int device) { check_cuda(cudaSetDevice(device), "cudaSetDevice"); }

inline bool sync_after_launch() {
  static const bool sync = runtime::settings().cuda_sync;
  return sync;
}

// Call right after `kernel<<<...>>>`: a bad launch configuration throws naming the kernel.
inline void check_launch(const char* kernel) {
  check_cuda(cudaGetLastError(), kernel);
  if (sync_after_launch()) check_cuda(cudaDeviceSynchronize(), kernel);
}

constexpr int kThreads = 256;

// for (i over [0, n)) spread over the grid: each thread steps by the grid's size, so any n fits
// in one launch of blocks_for(n) blocks.
#define FUSELAB_GRID_STRIDE_LOOP(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(blockDim.x) * gridDim.x)

// Blocks for a grid-stride loop over n elements: enough to fill the device, never over the limit.
inline int blocks_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return int(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

}  // namespace fuselab::kernels::cuda
