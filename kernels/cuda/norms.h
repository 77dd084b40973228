// RMSNorm on CUDA over the last dim of x [rows, cols]; the math is kernels/cpu/norms.h's:
//
//   rstd = 1 / sqrt(mean_j x_j^2 + eps);  xhat = x * rstd;  y = xhat * w
//   backward: g = dy * w;  dx = rstd * (g - xhat * mean_j(g_j xhat_j)) (+ residual_grad)
//             dw = sum_rows dy * xhat
//
// One block per row. Pointers are device pointers on `device`; dx, residual_grad and dw may be
// null. Unlike the CPU kernel, dw is written, not accumulated into; `scratch` holds
// rmsnorm_backward_scratch(rows, cols) elements for its two-level sum (no atomics).
#pragma once

#include <cstdint>

namespace fuselab::kernels::cuda {

template <class T>
void rmsnorm_forward(const T* x, const T* w, T* y, T* rstd, int64_t rows, int64_t cols, T eps, int device);

int64_t rmsnorm_backward_scratch(int64_t rows, int64_t cols);
template <class T>
void rmsnorm_backward(const T* x, const T* w, const T* rstd, const T* dy, const T* residual_grad, T* dx, T* dw,
                      T* scratch, int64_t rows, int64_t cols, int device);

// The explicit instantiations, for the .cu file and for stubs.cc (T = float, double).
#define FUSELAB_CUDA_NORMS_INSTANTIATE(T) \
  template void rmsnorm_forward<T>(const T*, const T*, T*, T*, int64_t, int64_t, T, int);                   \
  template void rmsnorm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, int64_t,  \
                                    int64_t, int);

}  // namespace fuselab::kernels::cuda
