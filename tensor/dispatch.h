// Calls a generic lambda with a value of the C++ type behind a runtime dtype:
//   dispatch_floating(t.dtype(), "gelu", [&](auto zero) { using T = decltype(zero); ... });
#pragma once

#include <cstdint>

#include "tensor/dtype.h"
#include "tensor/error.h"

namespace fuselab {

template <class F>
void dispatch_floating(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    default: fail(op, ": needs a float32 or float64 tensor, got ", dtype);
  }
}

template <class F>
void dispatch_all(DType dtype, const char* op, F&& f) {
  if (dtype == DType::Int64) return f(int64_t{});
  dispatch_floating(dtype, op, f);
}

}  // namespace fuselab
