// Caching allocators: freed blocks are kept by size class and handed out again, so a training
// step after warm-up takes no memory from the system (fresh pages cost page faults).
#pragma once

#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tensor/device.h"
#include "tensor/error.h"

namespace fuselab {

// What allocate() throws when the system has no memory left for a block: an Error naming the
// bytes and the device, of its own type so that a program can add what asked for them (a training
// run names the flags that size its batch).
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

struct AllocatorStats {
  size_t bytes_in_use = 0;        // handed out and not yet returned
  size_t peak_bytes_in_use = 0;   // high-water mark since the last reset_peak()
  size_t bytes_cached = 0;        // returned and kept for reuse
  size_t system_allocations = 0;  // blocks taken from the system, ever
};

class CachingAllocator {
 public:
  explicit CachingAllocator(Device device);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // The allocator of a device; one per device for the life of the process.
  static CachingAllocator& of(Device device);

  // A block of at least `bytes`, 64-byte aligned; `bytes` may be 0.
  void* allocate(size_t bytes);
  // `bytes` must be what was passed to allocate().
  void deallocate(void* ptr, size_t bytes);

  AllocatorStats stats() const;
  void reset_peak();
  void empty_cache();  // gives every cached block back to the system

  // Test switch: every block handed out is first filled with 0xFF bytes, which read as NaN in
  // float32 and float64, so an output element a kernel forgets to write shows up.
  void set_poison(bool poison);

  // Sizes are rounded up to one of four classes per power of two (at most 25% slack).
  static size_t size_class(size_t bytes);

 private:
  void* system_allocate(size_t bytes);
  void system_free(void* ptr);
  void fill_poison(void* ptr, size_t bytes);

  Device device_;
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_blocks_;
  AllocatorStats stats_;
  bool poison_ = false;
};

}  // namespace fuselab
