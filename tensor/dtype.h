// Element types a Tensor can hold, and the C++ type behind each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>

namespace fuselab {

enum class DType { Float32, Float64, Int64 };

inline size_t dtype_size(DType dtype) { return dtype == DType::Float32 ? 4 : 8; }
inline bool is_floating(DType dtype) { return dtype != DType::Int64; }

inline const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
  }
  return "?";
}

inline std::ostream& operator<<(std::ostream& os, DType dtype) { return os << dtype_name(dtype); }

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }

}  // namespace fuselab
