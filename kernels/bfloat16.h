// bfloat16: the top 16 bits of an IEEE float32 (1 sign, 8 exponent, 7 mantissa bits). It keeps
// float32's range with about 3 significant digits, so it halves the bytes a kernel moves, and
// kernels compute in float32 (compute_t<bfloat16> is float): load, widen, compute, round, store.
//
// Rounding float32 -> bfloat16 is to nearest, ties to even, on the bits:
//   bits16 = (bits32 + 0x7FFF + ((bits32 >> 16) & 1)) >> 16
// (NaN is kept a quiet NaN, which the addition could otherwise carry into infinity). Widening is
// exact: bits32 = bits16 << 16.
//
// The same type runs in CPU and CUDA kernels; it has the layout of CUDA's __nv_bfloat16.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/host_device.h"

namespace fuselab {

struct bfloat16 {
  uint16_t bits;

  bfloat16() = default;  // trivial, like float: uninitialized unless value-initialized (bfloat16{})
  FUSELAB_HOST_DEVICE bfloat16(float value) : bits(round_to_bf16(value)) {}  // NOLINT: rounds like a float
  FUSELAB_HOST_DEVICE explicit bfloat16(double value) : bfloat16(float(value)) {}
  FUSELAB_HOST_DEVICE explicit bfloat16(int value) : bfloat16(float(value)) {}
  FUSELAB_HOST_DEVICE explicit bfloat16(int64_t value) : bfloat16(float(value)) {}
  FUSELAB_HOST_DEVICE operator float() const {  // NOLINT: widens like a float
    const uint32_t wide = uint32_t(bits) << 16;
    float value;
    memcpy(&value, &wide, sizeof(value));
    return value;
  }

 private:
  static FUSELAB_HOST_DEVICE uint16_t round_to_bf16(float value) {
    uint32_t wide;
    memcpy(&wide, &value, sizeof(wide));
    if ((wide & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((wide >> 16) | 0x0040u);  // NaN stays NaN
    return uint16_t((wide + 0x7FFFu + ((wide >> 16) & 1u)) >> 16);
  }
};

// Arithmetic on bfloat16 happens in float32 (through the conversion); accumulating into one
// rounds the float32 sum back.
FUSELAB_HOST_DEVICE inline bfloat16& operator+=(bfloat16& a, float b) {
  a = bfloat16(float(a) + b);
  return a;
}

// The type kernels accumulate and compute in: float for bfloat16, the type itself otherwise.
template <class T> struct compute_type { using type = T; };
template <> struct compute_type<bfloat16> { using type = float; };
template <class T> using compute_t = typename compute_type<T>::type;

}  // namespace fuselab
