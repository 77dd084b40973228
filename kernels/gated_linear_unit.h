// A gated linear unit over x [rows, 2n]: a = x[:, :n] (the gate's input), b = x[:, n:];
//   y = gate(a) * b  [rows, n],   da = dy * b * gate'(a),   db = dy * gate(a)
// The per-element math is kernels/gated_linear_unit_math.h's. Kernels:
// kernels/cpu/gated_linear_unit.cc and kernels/cuda/gated_linear_unit.cu.
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/kernel.h"

namespace fuselab::kernels {

template <class T>
struct GatedLinearUnitForward {
  Activation gate;
  const T* x;
  T* y;
  int64_t rows, n;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct GatedLinearUnitBackward {
  Activation gate;
  const T* x;
  const T* dy;
  T* dx;  // [rows, 2n] = [da | db]
  int64_t rows, n;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_GATED_LINEAR_UNIT_KERNELS(X)      \
  X(GatedLinearUnitForward, FUSELAB_FLOAT_DOUBLE) \
  X(GatedLinearUnitBackward, FUSELAB_FLOAT_DOUBLE)

}  // namespace fuselab::kernels
