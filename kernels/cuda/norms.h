// RMSNorm and LayerNorm on CUDA over the last dim of x [rows, cols]; the math is
// kernels/cpu/norms.h's:
//
// RMSNorm:   rstd = 1 / sqrt(mean_j x_j^2 + eps);  xhat = x * rstd;  y = xhat * w
//   backward: g = dy * w;  dx = rstd * (g - xhat * mean_j(g_j xhat_j)) (+ residual_grad)
//             dw = sum_rows dy * xhat
// LayerNorm: mu = mean_j x_j;  rstd = 1 / sqrt(mean_j (x_j - mu)^2 + eps);  xhat = (x - mu) * rstd
//   y = xhat * w + b
//   backward: g = dy * w;  dx = rstd * (g - mean_j g_j - xhat * mean_j(g_j xhat_j))
//             dw = sum_rows dy * xhat;  db = sum_rows dy
//
// One block per row. Pointers are device pointers on `device`; dx, residual_grad, dw and db may
// be null. Unlike the CPU kernels, dw and db are written, not accumulated into; `scratch` holds
// norm_backward_scratch(rows, cols) elements for their two-level sums (no atomics). T is float,
// double or bfloat16; the row statistics (mean, rstd), eps, the sums and the scratch are in
// compute_t<T> (float32 for bfloat16).
#pragma once

#include <cstdint>

#include "kernels/bfloat16.h"

namespace fuselab::kernels::cuda {

template <class T>
void rmsnorm_forward(const T* x, const T* w, T* y, compute_t<T>* rstd, int64_t rows, int64_t cols, compute_t<T> eps,
                     int device);

int64_t norm_backward_scratch(int64_t rows, int64_t cols);
template <class T>
void rmsnorm_backward(const T* x, const T* w, const compute_t<T>* rstd, const T* dy, const T* residual_grad, T* dx,
                      T* dw, compute_t<T>* scratch, int64_t rows, int64_t cols, int device);

template <class T>
void layernorm_forward(const T* x, const T* w, const T* b, T* y, compute_t<T>* mean, compute_t<T>* rstd, int64_t rows,
                       int64_t cols, compute_t<T> eps, int device);

template <class T>
void layernorm_backward(const T* x, const T* w, const compute_t<T>* mean, const compute_t<T>* rstd, const T* dy, T* dx,
                        T* dw, T* db, compute_t<T>* scratch, int64_t rows, int64_t cols, int device);

// The explicit instantiations, for the .cu file and for stubs.cc (T = float, double, bfloat16).
#define FUSELAB_CUDA_NORMS_INSTANTIATE(T)                                                                          \
  template void rmsnorm_forward<T>(const T*, const T*, T*, compute_t<T>*, int64_t, int64_t, compute_t<T>, int);   \
  template void rmsnorm_backward<T>(const T*, const T*, const compute_t<T>*, const T*, const T*, T*, T*,          \
                                    compute_t<T>*, int64_t, int64_t, int);                                         \
  template void layernorm_forward<T>(const T*, const T*, const T*, T*, compute_t<T>*, compute_t<T>*, int64_t,     \
                                     int64_t, compute_t<T>, int);                                                  \
  template void layernorm_backward<T>(const T*, const T*, const compute_t<T>*, const compute_t<T>*, const T*, T*, \
                                      T*, T*, compute_t<T>*, int64_t, int64_t, int);

}  // namespace fuselab::kernels::cuda
