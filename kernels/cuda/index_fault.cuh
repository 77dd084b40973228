// The device side of kernels/index_fault.h.
#pragma once

#include "kernels/index_fault.h"

namespace fuselab::kernels::cuda {

// Whether 0 <= value < limit; the first value on the device that is not is recorded in `fault`,
// with the row it was found in.
__device__ inline bool in_range(int64_t value, int64_t limit, int64_t row, IndexFault::Kind kind, IndexFault* fault) {
  if (value >= 0 && value < limit) return true;
  if (atomicCAS(&fault->kind, int(IndexFault::kNone), int(kind)) == IndexFault::kNone) {
    fault->value = value;
    fault->limit = limit;
    fault->row = row;
  }
  return false;
}

}  // namespace fuselab::kernels::cuda
