// StridedIndex: the i-th element of a row-major shape, mapped to an offset through any strides;
// shared by the CPU and CUDA broadcast kernels.
//
// Broadcasting is a stride of 0. Expanding x to a result shape reads, for each result element i,
// x[offset(i)] with x's strides and 0 along the dims x is broadcast along. Summing the result's
// grad back to x's shape splits the result's dims in two, each its own StridedIndex over the
// grad's strides: the dims x keeps (one output element each) and the dims it was broadcast along
// (summed): dx[j] = sum_k grad[kept.offset(j) + summed.offset(k)].
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace fuselab::kernels {

struct StridedIndex {
  static constexpr int kMaxDims = 8;
  int dims = 0;  // 0: the one element at offset 0
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};

  // Peels the coordinates off i from the last dim, which varies fastest.
  FUSELAB_HOST_DEVICE int64_t offset(int64_t i) const {
    int64_t result = 0;
    for (int d = dims - 1; d >= 0; --d) {
      result += (i % sizes[d]) * strides[d];
      i /= sizes[d];
    }
    return result;
  }
};

}  // namespace fuselab::kernels
