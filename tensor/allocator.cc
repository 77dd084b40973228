#include "tensor/allocator.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <sstream>
#include <string>

#include "kernels/cuda/device_api.h"
#include "tensor/error.h"

namespace fuselab {

constexpr size_t kAlignment = 64;

namespace {

template <class... Parts>
std::string message(const Parts&... parts) {
  std::ostringstream text;
  (text << ... << parts);
  return text.str();
}

}  // namespace

CachingAllocator::CachingAllocator(Device device) : device_(device) {}

CachingAllocator::~CachingAllocator() { empty_cache(); }

CachingAllocator& CachingAllocator::of(Device device) {
  static std::mutex mutex;
  // Never destroyed: tensors in static storage may outlive any destruction order.
  static auto* allocators = new std::map<std::pair<int, int>, std::unique_ptr<CachingAllocator>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = (*allocators)[{int(device.kind), device.index}];
  if (!slot) slot = std::make_unique<CachingAllocator>(device);
  return *slot;
}

size_t CachingAllocator::size_class(size_t bytes) {
  if (bytes <= kAlignment) return kAlignment;
  // Past half of size_t no power of two holds `bytes` (the doubling below would wrap to 0 and spin):
  // no class, and system_allocate refuses it (OutOfMemory).
  if (bytes > std::numeric_limits<size_t>::max() / 2) return bytes;
  size_t power = kAlignment;
  while (power < bytes) power *= 2;
  // bytes is in (power/2, power]: four classes in that range are power/8 apart.
  const size_t step = power / 8 < kAlignment ? kAlignment : power / 8;
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::system_allocate(size_t bytes) {
  if (device_.is_cuda()) {
    try {
      return kernels::cuda::device_malloc(bytes, device_.index);
    } catch (const std::exception& e) {
      throw OutOfMemory(message("allocate ", bytes, " bytes on ", device_, ": ", e.what()));
    }
  }
  // No system allocation exceeds PTRDIFF_MAX (glibc's malloc refuses it), and past half of size_t
  // the size is no multiple of the alignment, which aligned_alloc does not allow (ASan aborts on it).
  const size_t largest = size_t(std::numeric_limits<std::ptrdiff_t>::max());
  void* ptr = bytes <= largest ? std::aligned_alloc(kAlignment, bytes) : nullptr;
  if (ptr == nullptr) throw OutOfMemory(message("allocate ", bytes, " bytes on cpu: out of memory"));
  return ptr;
}

void CachingAllocator::system_free(void* ptr) {
  if (device_.is_cuda()) {
    kernels::cuda::device_free(ptr, device_.index);
  } else {
    std::free(ptr);
  }
}

void* CachingAllocator::allocate(size_t bytes) {
  const size_t size = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  void* ptr = nullptr;
  auto& blocks = free_blocks_[size];
  if (!blocks.empty()) {
    ptr = blocks.back();
    blocks.pop_back();
    stats_.bytes_cached -= size;
  } else {
    ptr = system_allocate(size);
    ++stats_.system_allocations;
  }
  stats_.bytes_in_use += size;
  if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
  if (poison_) fill_poison(ptr, size);
  return ptr;
}

void CachingAllocator::fill_poison(void* ptr, size_t bytes) {
  if (device_.is_cuda()) return kernels::cuda::fill_bytes(ptr, 0xFF, bytes, device_.index);
  std::memset(ptr, 0xFF, bytes);
}

void CachingAllocator::set_poison(bool poison) {
  std::lock_guard<std::mutex> lock(mutex_);
  poison_ = poison;
}

void CachingAllocator::deallocate(void* ptr, size_t bytes) {
  const size_t size = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  free_blocks_[size].push_back(ptr);
  stats_.bytes_in_use -= size;
  stats_.bytes_cached += size;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [size, blocks] : free_blocks_) {
    for (void* ptr : blocks) system_free(ptr);
  }
  free_blocks_.clear();
  stats_.bytes_cached = 0;
}

}  // namespace fuselab
