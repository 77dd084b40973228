// device_api.h for builds without the CUDA toolkit (--config=cpu): no devices.
#include <stdexcept>
#include <string>

#include "kernels/cuda/device_api.h"

namespace fuselab::kernels::cuda {
namespace {
[[noreturn]] void unavailable(const char* call) {
  throw std::runtime_error(std::string(call) + ": FuseLab was built without CUDA (--config=cpu)");
}
}  // namespace

bool compiled_with_cuda() { return false; }
int device_count() { return 0; }
void* device_malloc(size_t, int) { unavailable("cudaMalloc"); }
void device_free(void*, int) { unavailable("cudaFree"); }
void copy_host_to_device(void*, const void*, size_t, int) { unavailable("cudaMemcpy"); }
void copy_device_to_host(void*, const void*, size_t, int) { unavailable("cudaMemcpy"); }
void copy_device_to_device(void*, const void*, size_t, int) { unavailable("cudaMemcpy"); }
void memset_zero(void*, size_t, int) { unavailable("cudaMemset"); }
void add_f32(const float*, const float*, float*, int64_t, int) { unavailable("add_f32"); }

}  // namespace fuselab::kernels::cuda
