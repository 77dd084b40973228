// Index faults: an id or label out of range, found by a kernel on the device.
//
// A CUDA kernel that finds one records the first in an IndexFault and goes on without reading out
// of bounds (a lookup writes zeros, a loss skips the row), so the host need not wait for the kernel
// to check its inputs. The record lives in pinned host memory mapped into the device
// (kernels/cuda/device_api.h), so the host reads it without a copy: after each wait for the device
// (a copy to the host, synchronize), and throws there, naming what was out of range. On the CPU
// the callers check before the kernel runs, and the error comes at once.
#pragma once

#include <cstdint>

namespace fuselab::kernels {

struct IndexFault {
  enum Kind : int32_t { kNone = 0, kEmbeddingId = 1, kCrossEntropyLabel = 2 };
  int32_t kind;  // kNone until a kernel records one; set first, with an atomic compare-and-swap
  int64_t value, limit;
  int64_t row;  // where the value was: the id's position, the label's row
};

}  // namespace fuselab::kernels
