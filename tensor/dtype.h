// Element types a Tensor can hold, and the C++ type behind each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>

#include "kernels/bfloat16.h"

namespace fuselab {

// BFloat16 is a storage type: the ops that take it (see dispatch.h) compute in float32.
enum class DType { Float32, Float64, Int64, BFloat16 };

inline size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::BFloat16: return 2;
    default: return 8;
  }
}
inline bool is_floating(DType dtype) { return dtype != DType::Int64; }
// The dtype kernels compute and keep statistics in: float32 for bfloat16 (compute_t's runtime twin).
inline DType compute_dtype(DType dtype) { return dtype == DType::BFloat16 ? DType::Float32 : dtype; }

inline const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
    case DType::BFloat16: return "bfloat16";
  }
  return "?";
}

inline std::ostream& operator<<(std::ostream& os, DType dtype) { return os << dtype_name(dtype); }

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<bfloat16>() { return DType::BFloat16; }

}  // namespace fuselab
