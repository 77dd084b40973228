// The part of CUDA that kernels/cuda's own kernels use, for running them on the CPU.
//
// The emulated build compiles each .cu file with the host compiler, this header in place of the
// toolkit's, after rewrite_launches has turned each `kernel<<<grid, block>>>(args)` into a call of
// cuda_emulator::launch (see rewrite_launches.cc). See grid.h for how a launch runs.
#pragma once

#include <math.h>  // sqrt, exp, ... for float and double in the global namespace, as nvcc has them

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tools/cuda_emulator/grid.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
// One block runs at a time (grid.h), so a static local is the running block's shared memory.
#define __shared__ static

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevice = 101,
};

enum cudaMemcpyKind {
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
};

const char* cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetLastError();  // returns the last error and clears it
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaMalloc(void** ptr, size_t bytes);
template <class T>
cudaError_t cudaMalloc(T** ptr, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemset(void* ptr, int value, size_t bytes);
// Pinned host memory the device can address: on the emulator, host memory the kernels (which run
// on the host) read and write as it is, so the device pointer is the host pointer.
constexpr unsigned cudaHostAllocMapped = 2;
cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned flags);
cudaError_t cudaHostGetDevicePointer(void** device_ptr, void* host_ptr, unsigned flags);
// The old value of *address, replaced by value when it equaled compare (the emulator's threads are
// fibers on one OS thread, so no other thread runs in between).
inline int atomicCAS(int* address, int compare, int value) {
  const int old = *address;
  if (old == compare) *address = value;
  return old;
}

void __syncthreads();

namespace cuda_emulator {
void record_error(cudaError_t error);  // what the next cudaGetLastError() returns
}  // namespace cuda_emulator

// value from lane (this lane ^ lane_mask) of the warp; every lane of a full warp must take part.
template <class T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "the emulator shuffles values of up to 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = cuda_emulator::shuffle_xor(mask, bits, lane_mask);
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}
