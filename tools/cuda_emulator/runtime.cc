// The emulated CUDA runtime: one device whose memory is host memory from operator new, so
// AddressSanitizer sees every kernel access against the buffer it belongs to. Each buffer is
// remembered, so a copy, fill or free that reaches outside the device's memory, and a host
// pointer passed to a kernel, are caught as the GPU would catch them (or worse, would not).
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <utility>

#include "tools/cuda_emulator/host_traffic.h"
#include "tools/cuda_emulator/include/cuda_runtime.h"

namespace cuda_emulator {
namespace {

constexpr std::align_val_t kAlignment{256};  // cudaMalloc's alignment

std::mutex mutex;
// start -> bytes of each live cudaMalloc. Never destroyed: static destructors that free device
// memory at exit (a caching allocator's) may run after this file's.
std::map<const char*, size_t>& buffers = *new std::map<const char*, size_t>;
thread_local cudaError_t last_error = cudaSuccess;
HostTraffic traffic;  // under mutex

// Whether [ptr, ptr + bytes) lies inside one live buffer.
bool on_device(const void* ptr, size_t bytes) {
  const char* p = static_cast<const char*>(ptr);
  std::lock_guard<std::mutex> lock(mutex);
  auto next = buffers.upper_bound(p);
  if (next == buffers.begin()) return false;
  const auto& [start, size] = *std::prev(next);
  return p + bytes <= start + size;
}

cudaError_t result(cudaError_t error) {
  if (error != cudaSuccess) last_error = error;
  return error;
}

}  // namespace

void record_error(cudaError_t error) { result(error); }

HostTraffic host_traffic() {
  std::lock_guard<std::mutex> lock(mutex);
  return traffic;
}

namespace {

void count(int64_t HostTraffic::*what) {
  std::lock_guard<std::mutex> lock(mutex);
  ++(traffic.*what);
}

}  // namespace

void expect_device_pointer(const char* kernel, const void* ptr) {
  if (ptr == nullptr || on_device(ptr, 0)) return;
  std::fprintf(stderr, "cuda_emulator: %s: argument %p is not device memory\n", kernel, ptr);
  std::abort();
}

}  // namespace cuda_emulator

using cuda_emulator::on_device;
using cuda_emulator::result;

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
  }
  return "unknown error";
}

cudaError_t cudaGetLastError() { return std::exchange(cuda_emulator::last_error, cudaSuccess); }

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) { return result(device == 0 ? cudaSuccess : cudaErrorInvalidDevice); }

cudaError_t cudaDeviceSynchronize() {  // every launch has finished on return
  cuda_emulator::count(&cuda_emulator::HostTraffic::waits);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;
  *ptr = ::operator new(bytes, cuda_emulator::kAlignment, std::nothrow);
  if (*ptr == nullptr) return result(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(cuda_emulator::mutex);
  cuda_emulator::buffers[static_cast<const char*>(*ptr)] = bytes;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(cuda_emulator::mutex);
    if (cuda_emulator::buffers.erase(static_cast<const char*>(ptr)) == 0) return result(cudaErrorInvalidValue);
    ++cuda_emulator::traffic.waits;
  }
  ::operator delete(ptr, cuda_emulator::kAlignment);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  const bool device_dst = kind != cudaMemcpyDeviceToHost, device_src = kind != cudaMemcpyHostToDevice;
  if (on_device(dst, bytes) != device_dst || on_device(src, bytes) != device_src) return result(cudaErrorInvalidValue);
  if (device_dst != device_src) {
    cuda_emulator::count(device_dst ? &cuda_emulator::HostTraffic::to_device : &cuda_emulator::HostTraffic::to_host);
  }
  std::memcpy(dst, src, bytes);
  return cudaSuccess;
}

// Mapped host memory is listed with the device buffers: kernels may take it as an argument.
cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned) {
  *ptr = ::operator new(bytes, cuda_emulator::kAlignment, std::nothrow);
  if (*ptr == nullptr) return result(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(cuda_emulator::mutex);
  cuda_emulator::buffers[static_cast<const char*>(*ptr)] = bytes;
  return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void** device_ptr, void* host_ptr, unsigned) {
  *device_ptr = host_ptr;
  return cudaSuccess;
}

cudaError_t cudaMemset(void* ptr, int value, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!on_device(ptr, bytes)) return result(cudaErrorInvalidValue);
  std::memset(ptr, value, bytes);
  return cudaSuccess;
}
