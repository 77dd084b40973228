// CUDA implementation of device_api.h.
#include "kernels/cuda/device_api.h"

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.h"

namespace fuselab::kernels::cuda {
namespace {

// The records of each device by op name, host and device addresses of the same pinned memory, made
// when an op's kernel first needs one; never freed.
struct MappedFault {
  IndexFault* host;
  IndexFault* device;
};

std::mutex faults_mutex;
std::map<int, std::map<std::string, MappedFault>>& mapped_faults() {
  static auto* records = new std::map<int, std::map<std::string, MappedFault>>;
  return *records;
}

MappedFault& mapped_fault(int device, const std::string& op) {
  std::lock_guard<std::mutex> lock(faults_mutex);
  std::map<std::string, MappedFault>& records = mapped_faults()[device];
  auto found = records.find(op);
  if (found != records.end()) return found->second;
  use_device(device);
  void *host = nullptr, *mapped = nullptr;
  check_cuda(cudaHostAlloc(&host, sizeof(IndexFault), cudaHostAllocMapped), "cudaHostAlloc(index fault)");
  check_cuda(cudaHostGetDevicePointer(&mapped, host, 0), "cudaHostGetDevicePointer(index fault)");
  *static_cast<IndexFault*>(host) = IndexFault{IndexFault::kNone, 0, 0, 0};
  const MappedFault record{static_cast<IndexFault*>(host), static_cast<IndexFault*>(mapped)};
  return records.emplace(op, record).first->second;
}

// Throws a fault a kernel recorded on `device`, if any (the first op's by name when several did),
// naming the op that found it, and clears every record; the device has finished its kernels.
void throw_recorded_fault(int device) {
  std::string op;
  IndexFault found{IndexFault::kNone, 0, 0, 0};
  {
    std::lock_guard<std::mutex> lock(faults_mutex);
    for (auto& [name, record] : mapped_faults()[device]) {
      if (record.host->kind == IndexFault::kNone) continue;
      if (found.kind == IndexFault::kNone) {
        op = name;
        found = *record.host;
      }
      *record.host = IndexFault{IndexFault::kNone, 0, 0, 0};
    }
  }
  if (found.kind == IndexFault::kNone) return;
  const std::string where = " (found on cuda:" + std::to_string(device) +
                            " by a kernel queued earlier; reported at the next read from the device)";
  if (found.kind == IndexFault::kEmbeddingId) {
    throw std::out_of_range(op + ": id " + std::to_string(found.value) + " at position " +
                            std::to_string(found.row) + " of the ids out of range for a table of " +
                            std::to_string(found.limit) + " rows" + where);
  }
  throw std::out_of_range(op + ": label " + std::to_string(found.value) + " in row " + std::to_string(found.row) +
                          " out of range for " + std::to_string(found.limit) + " classes" + where);
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
  throw_recorded_fault(device);
}

void copy_device_to_device(void* dst, const void* src, size_t bytes, int device) {
  use_device(device);
  check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy(device to device)");
}

void synchronize(int device) {
  use_device(device);
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  throw_recorded_fault(device);
}

IndexFault* index_fault_record(int device, const std::string& op) { return mapped_fault(device, op).device; }

void fill_bytes(void* ptr, unsigned char value, size_t bytes, int device) {
  use_device(device);
  check_cuda(cudaMemset(ptr, value, bytes), "cudaMemset");
}

}  // namespace fuselab::kernels::cuda
