// SwiGLU over x [rows, 2n]: a = x[:, :n] (the gate), b = x[:, n:];  y = silu(a) * b  [rows, n].
//   da = dy * b * silu'(a),  db = dy * silu(a)
// The per-element math is kernels/swiglu_math.h's. Kernels: kernels/cpu/swiglu.cc and
// kernels/cuda/swiglu.cu.
#pragma once

#include <cstdint>

#include "kernels/kernel.h"

namespace fuselab::kernels {

template <class T>
struct SwiGLUForward {
  const T* x;
  T* y;
  int64_t rows, n;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct SwiGLUBackward {
  const T* x;
  const T* dy;
  T* dx;  // [rows, 2n] = [da | db]
  int64_t rows, n;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_SWIGLU_KERNELS(X)        \
  X(SwiGLUForward, FUSELAB_FLOAT_DOUBLE) \
  X(SwiGLUBackward, FUSELAB_FLOAT_DOUBLE)

}  // namespace fuselab::kernels
