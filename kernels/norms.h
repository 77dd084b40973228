// RMSNorm and LayerNorm over the last dim of x [rows, cols], with a learnable weight (and bias).
//
// RMSNorm:   rstd = 1 / sqrt(mean_j x_j^2 + eps);  xhat = x * rstd;  y = xhat * w
//   backward: g = dy * w;  dx = rstd * (g - xhat * mean_j(g_j xhat_j)) (+ residual_grad)
//             dw = sum_rows dy * xhat
// LayerNorm: mu = mean_j x_j;  rstd = 1 / sqrt(mean_j (x_j - mu)^2 + eps);  xhat = (x - mu) * rstd
//   y = xhat * w + b
//   backward: g = dy * w;  dx = rstd * (g - mean_j g_j - xhat * mean_j(g_j xhat_j)) (+ residual_grad)
//             dw = sum_rows dy * xhat;  db = sum_rows dy
//
// The fused add-and-norm, as llm.c fuses the residual add into its layernorm: the forward
// kernels' `residual`, when not null, makes x the sum h = x + residual, written to `sum` (rounded
// to T, as a separate add would) and normalized in the same pass; the backward kernels'
// `residual_grad`, when not null, is added to dx in the same pass.
//
// The backward kernels read x, dy and the row statistics once per row; dx, dw and db may be null
// (not needed). The row statistics (mean, rstd), eps and every sum are in compute_t<T>: float32
// for bfloat16. Kernels: kernels/cpu/norms.cc and kernels/cuda/norms.cu.
#pragma once

#include <cstdint>

#include "kernels/kernel.h"

namespace fuselab::kernels {

template <class T>
struct RMSNormForward {
  const T* x;
  const T* residual;  // may be null
  T* sum;             // x + residual, when residual is given
  const T* w;
  T* y;
  compute_t<T>* rstd;  // [rows]
  int64_t rows, cols;
  compute_t<T> eps;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct RMSNormBackward {
  const T* x;
  const T* w;
  const compute_t<T>* rstd;
  const T* dy;
  const T* residual_grad;
  T* dx;
  T* dw;
  int64_t rows, cols;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct LayerNormForward {
  const T* x;
  const T* residual;  // may be null
  T* sum;             // x + residual, when residual is given
  const T* w;
  const T* b;
  T* y;
  compute_t<T>* mean;  // [rows]
  compute_t<T>* rstd;  // [rows]
  int64_t rows, cols;
  compute_t<T> eps;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct LayerNormBackward {
  const T* x;
  const T* w;
  const compute_t<T>* mean;
  const compute_t<T>* rstd;
  const T* dy;
  const T* residual_grad;
  T* dx;
  T* dw;
  T* db;
  int64_t rows, cols;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_NORM_KERNELS(X)                      \
  X(RMSNormForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)   \
  X(RMSNormBackward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)  \
  X(LayerNormForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16) \
  X(LayerNormBackward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)

}  // namespace fuselab::kernels
