// A gated linear unit over x [rows, 2n]: a = x[:, :n] (the gate's input), b = x[:, n:];
//   y = gate(a) * b  [rows, n],   da = dy * b * gate'(a),   db = dy * gate(a)
// The per-element math is kernels/gated_linear_unit_math.h's. Kernels:
// kernels/cpu/gated_linear_unit.cc and kernels/cuda/gated_linear_unit.cu.
//
// LinearGatedLinearUnitForward is the Linear before it, fused (ForwardLinearGatedLinearUnit):
//   pre = x W^T (+ b)  [rows, 2n],   y = gate(pre[:, :n]) * pre[:, n:]  [rows, n]
// On the CPU it runs in panels of rows sized to stay in L2: each panel's GEMM, then its GLU while
// the panel is still in cache. pre may be null (no backward): then only one panel is ever held.
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

template <class T>
struct LinearGatedLinearUnitForward {
  Activation gate;
  const T* x;  // [rows, in]
  const T* w;  // [2n, in]
  const T* b;  // [2n] or null
  T* pre;      // [rows, 2n], kept for backward, or null
  T* y;        // [rows, n]
  int64_t rows, in, n;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_GATED_LINEAR_UNIT_KERNELS(X)                     \
  X(GatedLinearUnitForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)       \
  X(GatedLinearUnitBackward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)      \
  X(LinearGatedLinearUnitForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)

}  // namespace fuselab::kernels
