// CUDA implementation of device_api.h.
#include "kernels/cuda/device_api.h"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace fuselab::kernels::cuda {
namespace {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(status));
  }
}

void use_device(int device) { check(cudaSetDevice(device), "cudaSetDevice"); }

// One thread per element, grid-stride so any n fits in one launch.
__global__ void add_f32_kernel(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x) {
    out[i] = a[i] + b[i];
  }
}

}  // namespace

bool compiled_with_cuda() { return true; }

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

void* device_malloc(size_t bytes, int device) {
  use_device(device);
  void* ptr = nullptr;
  check(cudaMalloc(&ptr, bytes), "cudaMalloc");
  return ptr;
}

void device_free(void* ptr, int device) {
  use_device(device);
  check(cudaFree(ptr), "cudaFree");
}

void copy_host_to_device(void* dst, const void* src, size_t bytes, int device) {
  use_device(device);
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy(host to device)");
}

void copy_device_to_host(void* dst, const void* src, size_t bytes, int device) {
  use_device(device);
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(device to host)");
}

void copy_device_to_device(void* dst, const void* src, size_t bytes, int device) {
  use_device(device);
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy(device to device)");
}

void memset_zero(void* ptr, size_t bytes, int device) {
  use_device(device);
  check(cudaMemset(ptr, 0, bytes), "cudaMemset");
}

void add_f32(const float* a, const float* b, float* out, int64_t n, int device) {
  if (n == 0) return;
  use_device(device);
  const int threads = 256;
  const int blocks = int((n + threads - 1) / threads < 65535 ? (n + threads - 1) / threads : 65535);
  add_f32_kernel<<<blocks, threads>>>(a, b, out, n);
  check(cudaGetLastError(), "add_f32_kernel launch");
  check(cudaDeviceSynchronize(), "add_f32_kernel");
}

}  // namespace fuselab::kernels::cuda
