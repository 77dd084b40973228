// CUDA implementation of device_api.h.
#include "kernels/cuda/device_api.h"

#include "kernels/cuda/cuda_check.h"

namespace fuselab::kernels::cuda {

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
  check_cuda(cudaMalloc(&ptr, bytes), "cudaMalloc");
  return ptr;
}

void device_free(void* ptr, int device) {
  use_device(device);
  check_cuda(cudaFree(ptr), "cudaFree");
}

void copy_host_to_device(void* dst, const void* src, size_t bytes, int device) {
  use_device(device);
  check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy(host to device)");
}

void copy_device_to_host(void* dst, const void* src, size_t bytes, int device) {
  use_device(device);
  check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(device to host)");
}

void copy_device_to_device(void* dst, const void* src, size_t bytes, int device) {
  use_device(device);
  check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy(device to device)");
}

void synchronize(int device) {
  use_device(device);
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

void fill_bytes(void* ptr, unsigned char value, size_t bytes, int device) {
  use_device(device);
  check_cuda(cudaMemset(ptr, value, bytes), "cudaMemset");
}

}  // namespace fuselab::kernels::cuda
