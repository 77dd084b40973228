#include "data/idx.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "tensor/dispatch.h"
#include "tensor/factories.h"

namespace fuselab {
namespace {

uint64_t big_endian(const uint8_t* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = value << 8 | p[i];
  return value;
}

// Element type code -> (size in bytes, signed, floating).
struct ElementType {
  int size;
  bool is_signed, floating;
};

bool element_type(uint8_t code, ElementType& type) {
  switch (code) {
    case 0x08: type = {1, false, false}; return true;
    case 0x09: type = {1, true, false}; return true;
    case 0x0B: type = {2, true, false}; return true;
    case 0x0C: type = {4, true, false}; return true;
    case 0x0D: type = {4, true, true}; return true;
    case 0x0E: type = {8, true, true}; return true;
  }
  return false;
}

double element(const uint8_t* p, const ElementType& type) {
  const uint64_t bits = big_endian(p, type.size);
  if (type.floating) {
    if (type.size == 4) {
      const uint32_t b = uint32_t(bits);
      float f;
      std::memcpy(&f, &b, 4);
      return f;
    }
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  if (!type.is_signed) return double(bits);
  const int shift = 64 - 8 * type.size;  // sign-extend
  return double(int64_t(bits << shift) >> shift);
}

}  // namespace

Tensor read_idx(const std::string& path, DType dtype) {
  std::ifstream file(path, std::ios::binary);
  check(file.good(), "read_idx ", path, ": cannot open it");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  check(bytes.size() >= 4 && bytes[0] == 0 && bytes[1] == 0, "read_idx ", path,
        ": offset 0: not an IDX file (the magic number starts with two zero bytes)");
  ElementType type;
  check(element_type(bytes[2], type), "read_idx ", path, ": offset 2: unknown element type 0x", std::hex,
        int(bytes[2]));
  const int dims = bytes[3];
  check(dims >= 1, "read_idx ", path, ": offset 3: no dimensions");
  check(bytes.size() >= 4 + 4 * size_t(dims), "read_idx ", path, ": offset ", bytes.size(),
        ": the file ends inside the ", dims, " dimension sizes");
  Shape shape;
  uint64_t count = 1;
  for (int d = 0; d < dims; ++d) {
    const uint64_t size = big_endian(&bytes[4 + 4 * d], 4);
    count *= size;
    check(count <= bytes.size(), "read_idx ", path, ": offset ", 4 + 4 * d, ": dimension sizes exceed the file");
    shape.push_back(int64_t(size));
  }
  const size_t header = 4 + 4 * size_t(dims), expected = header + count * size_t(type.size);
  check(bytes.size() == expected, "read_idx ", path, ": offset ", header, ": ", bytes.size() - header,
        " bytes of data, shape ", shape, " needs ", count * size_t(type.size));
  Tensor t = empty(shape, dtype);
  dispatch_all(dtype, "read_idx", [&](auto zero) {
    using T = decltype(zero);
    T* out = t.data<T>();
    for (uint64_t i = 0; i < count; ++i) out[i] = T(element(&bytes[header + i * size_t(type.size)], type));
  });
  return t;
}

}  // namespace fuselab
