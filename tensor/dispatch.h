// Calls a generic lambda with a value of the C++ type behind a runtime dtype:
//   dispatch_floating(t.dtype(), "gelu", [&](auto zero) { using T = decltype(zero); ... });
// Ops reach kernels through tensor/launch.h, which adds the device.
//
// bfloat16 is opt-in: an op whose kernels take it (computing in compute_t<T>, float32) dispatches
// with WithBFloat16::Yes; every other op throws naming itself when handed a bfloat16 tensor.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"
#include "tensor/error.h"

namespace fuselab {

enum class WithBFloat16 { No, Yes };

template <WithBFloat16 bf16 = WithBFloat16::No, class F>
void dispatch_floating(DType dtype, const char* op, F&& f) {
  if constexpr (bf16 == WithBFloat16::Yes) {
    if (dtype == DType::BFloat16) return f(bfloat16{});
  }
  switch (dtype) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    default:
      fail(op, ": needs a float32 or float64", bf16 == WithBFloat16::Yes ? " or bfloat16" : "", " tensor, got ",
           dtype);
  }
}

// Every dtype: for copies, fills and printing.
template <class F>
void dispatch_all(DType dtype, const char* op, F&& f) {
  if (dtype == DType::Int64) return f(int64_t{});
  dispatch_floating<WithBFloat16::Yes>(dtype, op, f);
}

}  // namespace fuselab
