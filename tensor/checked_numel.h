// The number of elements (and bytes) of a shape a caller was given, checked: a negative size, or a product
// past int64, which would wrap around and let a small buffer pass for a huge shape, is an error
// naming `op`. Private to the tensor library (its factories and views).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/error.h"
#include "tensor/shape.h"

namespace fuselab {

inline int64_t checked_numel(const Shape& shape, const char* op) {
  int64_t n = 1;
  for (int64_t size : shape) {
    check(size >= 0, op, ": negative size in shape ", shape);
    check(!__builtin_mul_overflow(n, size, &n), op, ": shape ", shape, " has more elements than an int64 counts");
  }
  return n;
}

// Its bytes at `element_size` each, checked as well.
inline size_t checked_bytes(const Shape& shape, size_t element_size, const char* op) {
  size_t bytes = 0;
  check(!__builtin_mul_overflow(size_t(checked_numel(shape, op)), element_size, &bytes), op, ": shape ", shape,
        " takes more bytes than a size_t counts");
  return bytes;
}

}  // namespace fuselab
