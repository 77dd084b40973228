// RMSNorm and LayerNorm over the last dim of x [rows, cols], with a learnable weight (and bias).
//
// RMSNorm:   rstd = 1 / sqrt(mean_j x_j^2 + eps);  xhat = x * rstd;  y = xhat * w
//   backward: g = dy * w;  dx = rstd * (g - xhat * mean_j(g_j xhat_j));  dw = sum_rows dy * xhat
// LayerNorm: mu = mean_j x_j;  rstd = 1 / sqrt(mean_j (x_j - mu)^2 + eps);  xhat = (x - mu) * rstd
//   y = xhat * w + b
//   backward: g = dy * w;  dx = rstd * (g - mean_j g_j - xhat * mean_j(g_j xhat_j))
//             dw = sum_rows dy * xhat;  db = sum_rows dy
// The backward kernels read x, dy and rstd once per row. `residual_grad`, when not null, is added
// to dx in the same pass (the fused add-and-norm backward); dw and db are accumulated into.
// The row statistics (mean, rstd) and every sum are in compute_t<T>: float32 for bfloat16.
#pragma once

#include <cstdint>

#include "kernels/bfloat16.h"

namespace fuselab::kernels::cpu {

template <class T>
void rmsnorm_forward(const T* x, const T* w, T* y, compute_t<T>* rstd, int64_t rows, int64_t cols, compute_t<T> eps);

template <class T>
void rmsnorm_backward(const T* x, const T* w, const compute_t<T>* rstd, const T* dy, const T* residual_grad, T* dx,
                      T* dw, int64_t rows, int64_t cols);

template <class T>
void layernorm_forward(const T* x, const T* w, const T* b, T* y, compute_t<T>* mean, compute_t<T>* rstd, int64_t rows,
                       int64_t cols, compute_t<T> eps);

template <class T>
void layernorm_backward(const T* x, const T* w, const compute_t<T>* mean, const compute_t<T>* rstd, const T* dy,
                        T* dx, T* dw, T* db, int64_t rows, int64_t cols);

}  // namespace fuselab::kernels::cpu
