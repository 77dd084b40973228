// A tensor shape: sizes of each dimension, row-major.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

namespace fuselab {

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t size : shape) n *= size;
  return n;
}

// `shape` with its last dim set to `last` (a row-wise op's output shape); shape has a dim.
inline Shape with_last(Shape shape, int64_t last) {
  shape.back() = last;
  return shape;
}

inline std::ostream& operator<<(std::ostream& os, const Shape& shape) {
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  return os << ']';
}

}  // namespace fuselab
