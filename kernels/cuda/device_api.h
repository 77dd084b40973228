// CUDA device memory, copies and kernels behind plain functions.
//
// A build without the CUDA toolkit links device_api_stub.cc instead of device_api.cu: the
// same functions, reporting zero devices. Failures throw std::runtime_error naming the CUDA
// call and its error string; the tensor layer adds the op that asked.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fuselab::kernels::cuda {

bool compiled_with_cuda();
int device_count();  // 0 without a driver or GPU: never throws

void* device_malloc(size_t bytes, int device);
void device_free(void* ptr, int device);
void copy_host_to_device(void* dst, const void* src, size_t bytes, int device);
void copy_device_to_host(void* dst, const void* src, size_t bytes, int device);
void copy_device_to_device(void* dst, const void* src, size_t bytes, int device);
void memset_zero(void* ptr, size_t bytes, int device);

// out[i] = a[i] + b[i] for i < n, float32, on `device`'s current stream; synchronous.
void add_f32(const float* a, const float* b, float* out, int64_t n, int device);

}  // namespace fuselab::kernels::cuda
