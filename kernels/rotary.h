// Rotary position embedding (Su et al., 2021) in the Hugging Face Llama convention, on the query and
// key heads of qkv [B, T, (H + 2 K) D] (kernels/attention.h's layout). Each head's row x at position
// p is split into halves x1 = x[0 .. D/2), x2 = x[D/2 .. D), and pair e < D/2 turns by the angle
// a_e = p theta^(-2e/D):
//
//   y1 = x1 cos a - x2 sin a,   y2 = x2 cos a + x1 sin a      (y = x cos a + rotate_half(x) sin a)
//
// The value heads pass unchanged. A rotation is orthogonal, so the backward turns dy back by -a:
//
//   dx1 = dy1 cos a + dy2 sin a,   dx2 = dy2 cos a - dy1 sin a
//
// cos a and sin a come in tables [T, D/2] of compute_t<T> (rotary_angle below, in float64), made once
// per call by the op and shared by every head. Kernels: kernels/cpu/rotary.cc, kernels/cuda/rotary.cu.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/kernel.h"

namespace fuselab::kernels {

// The angle of pair e of a head of size head_dim at `position`.
inline double rotary_angle(int64_t position, int64_t pair, int64_t head_dim, double theta) {
  return double(position) * std::pow(theta, -2.0 * double(pair) / double(head_dim));
}

// One pair turned by the angle whose cosine and sine are c and s (s negated turns it back).
template <class C>
FUSELAB_HOST_DEVICE inline void rotate_pair(C x1, C x2, C c, C s, C* y1, C* y2) {
  *y1 = x1 * c - x2 * s;
  *y2 = x2 * c + x1 * s;
}

struct RotaryShape {
  int64_t rows;           // B T
  int64_t tokens;         // T: row r is at table row r % T
  int64_t rotated_heads;  // H + K: the query and key heads, first in each row
  int64_t row;            // (H + 2 K) D
  int64_t head_dim;       // D, even
};

// y = the rotated qkv (inverse: turned back by -a, the backward of dy). y must not alias x.
template <class T>
struct ApplyRotary {
  RotaryShape s;
  const T* x;
  T* y;
  const compute_t<T>* cos;  // [T, D/2]
  const compute_t<T>* sin;
  bool inverse;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_ROTARY_KERNELS(X) X(ApplyRotary, FUSELAB_FLOAT_DOUBLE_BFLOAT16)

}  // namespace fuselab::kernels
