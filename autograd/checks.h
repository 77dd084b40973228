// Argument checks shared by the functional ops: each throws fuselab::Error naming the op.
#pragma once

#include "tensor/tensor.h"

namespace fuselab {

// Every functional op has CPU and CUDA kernels; this checks the dtype.
inline void check_floating(const char* op, const Tensor& t) {
  check(t.defined(), op, ": undefined tensor argument");
  check(is_floating(t.dtype()), op, ": needs a float32, float64 or bfloat16 tensor, got ", t.dtype(), " of shape ",
        t.shape());
}

inline void check_same_dtype_device(const char* op, const Tensor& a, const Tensor& b) {
  check(a.dtype() == b.dtype() && a.device() == b.device(), op, ": operands ", a.shape(), " ", a.dtype(),
        " on ", a.device(), " and ", b.shape(), " ", b.dtype(), " on ", b.device(),
        " must have the same dtype and device");
}

}  // namespace fuselab
