// The fused Linear ops: GEMMs with their epilogue, and the activation-and-bias backward.
//
//   LinearBiasActivationForward:  pre = x W^T + b;  y = act(pre)  (y = pre for Activation::None)
//   LinearBiasAddForward:         y = x W^T (+ b) + residual
//   ActivationBiasBackward:       dpre = dy * act'(pre);  dbias = sum_rows dpre
//
// x is [rows, in], W is [out, in], b is [out]. Unfused, Linear+Bias+GELU makes three passes over
// the [rows, out] output (GEMM write, bias read+write, activation read+write) and Linear+Bias+Add
// makes three as well. Fused, on the CPU (kernels/cpu/linear_epilogue.cc) each makes one with
// oneDNN's post-ops, two where pre must be kept (the GEMM writes pre, one pass writes y) and two on
// OpenBLAS (the GEMM, then one parallel pass for everything else); on CUDA, one where cuBLASLt has
// the epilogue (kernels/cuda/linear_epilogue.cu: bias; bias + ReLU; bias + GELU keeping pre as its
// aux output; the residual read as the GEMM's C with beta = 1), else two. pre, b and dbias may be null (not
// needed). T is float, double or bfloat16 (computed in float32).
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/kernel.h"

namespace fuselab::kernels {

// Where a forward kernel applied its epilogue: inside the GEMM (cuBLASLt); in its own pass after
// the GEMM by design (the CPU; on CUDA, an epilogue cuBLASLt lacks: SiLU, float64); or in its own
// pass because cuBLASLt offered no algorithm for the epilogue it was asked for, a device fallback
// that the fused op reports to the explain log.
enum class EpiloguePath { InGemm, OwnPass, FellBack };

template <class T>
struct LinearBiasActivationForward {
  const T* x;
  const T* w;
  const T* b;
  Activation act;
  T* pre;
  T* y;
  int64_t rows, in, out;
  EpiloguePath* path;  // where the epilogue ran, when not null
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct LinearBiasAddForward {
  const T* x;
  const T* w;
  const T* b;
  const T* residual;
  T* y;
  int64_t rows, in, out;
  EpiloguePath* path;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct ActivationBiasBackward {
  Activation act;
  const T* pre;
  const T* dy;
  T* dpre;
  T* dbias;
  int64_t rows, cols;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_LINEAR_EPILOGUE_KERNELS(X)                      \
  X(LinearBiasActivationForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16) \
  X(LinearBiasAddForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)        \
  X(ActivationBiasBackward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)

}  // namespace fuselab::kernels
