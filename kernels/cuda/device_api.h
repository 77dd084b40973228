// CUDA device memory and copies behind plain functions.
//
// A build without the CUDA toolkit links stubs.cc instead of the .cu files: the same
// functions, reporting zero devices. Failures throw std::runtime_error naming the CUDA call and
// its error string; the tensor layer adds the op that asked.
#pragma once

#include <cstddef>
#include <cstdint>

#include <string>

#include "kernels/index_fault.h"

namespace fuselab::kernels::cuda {

bool compiled_with_cuda();
int device_count();  // 0 without a driver or GPU: never throws

void* device_malloc(size_t bytes, int device);
void device_free(void* ptr, int device);
void copy_host_to_device(void* dst, const void* src, size_t bytes, int device);
void copy_device_to_host(void* dst, const void* src, size_t bytes, int device);
void copy_device_to_device(void* dst, const void* src, size_t bytes, int device);
// Waits for every kernel queued on `device`.
void synchronize(int device);
// The index-fault record (kernels/index_fault.h) of the kernels that `op` launches on the device
// ("Embedding(tokens)"), as the device addresses it: one record per op name, so a fault names the
// op instance that found it. The copies to the host and synchronize() throw a recorded fault, and
// clear it, once they have waited.
IndexFault* index_fault_record(int device, const std::string& op);
void fill_bytes(void* ptr, unsigned char value, size_t bytes, int device);  // cudaMemset

}  // namespace fuselab::kernels::cuda
