#include "kernels/cpu/norms.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/partial_sums.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels::cpu {
namespace {

// Runs row(r, dw_partial, db_partial) over all rows in parallel, each thread accumulating the
// weight (and bias) grads of its rows privately; the partials are then added into dw and db in
// thread order (partial_sums.h), so the result is deterministic.
template <class T, class Row>
void rows_with_param_grads(int64_t rows, int64_t cols, T* dw, T* db, Row&& row) {
  std::vector<T> sums(size_t(2 * cols), T(0));  // [dw | db]
  parallel_partial_sums<T>(rows, 2 * cols, rows * cols > kParallelGrain, sums.data(), false,
                           [&](int64_t r, T* partial) { row(r, partial, partial + cols); });
  for (int64_t c = 0; dw && c < cols; ++c) dw[c] += sums[size_t(c)];
  for (int64_t c = 0; db && c < cols; ++c) db[c] += sums[size_t(cols + c)];
}

}  // namespace

template <class T>
void rmsnorm_forward(const T* x, const T* w, T* y, T* rstd, int64_t rows, int64_t cols, T eps) {
#pragma omp parallel for schedule(static) if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    T sum_sq = 0;
#pragma omp simd reduction(+ : sum_sq)
    for (int64_t c = 0; c < cols; ++c) sum_sq += xr[c] * xr[c];
    const T s = T(1) / std::sqrt(sum_sq / T(cols) + eps);
    rstd[r] = s;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) yr[c] = xr[c] * s * w[c];
  }
}

template <class T>
void rmsnorm_backward(const T* x, const T* w, const T* rstd, const T* dy, const T* residual_grad, T* dx,
                      T* dw, int64_t rows, int64_t cols) {
  rows_with_param_grads<T>(rows, cols, dw, nullptr, [&](int64_t r, T* dw_partial, T*) {
    // Local copies: GCC does not vectorize loops that read a by-reference capture.
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    const T* wr = w;
    const T s = rstd[r];
    T dot = 0;  // sum_j g_j xhat_j
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < cols; ++c) dot += dyr[c] * wr[c] * xr[c] * s;
    const T mean_dot = dot / T(cols);
    if (dx) {
      T* dxr = dx + r * cols;
      if (residual_grad) {
        const T* rgr = residual_grad + r * cols;
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) dxr[c] = s * (dyr[c] * wr[c] - xr[c] * s * mean_dot) + rgr[c];
      } else {
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) dxr[c] = s * (dyr[c] * wr[c] - xr[c] * s * mean_dot);
      }
    }
    if (dw) {
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) dw_partial[c] += dyr[c] * xr[c] * s;
    }
  });
}

template <class T>
void layernorm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t rows,
                       int64_t cols, T eps) {
#pragma omp parallel for schedule(static) if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    T total = 0;
#pragma omp simd reduction(+ : total)
    for (int64_t c = 0; c < cols; ++c) total += xr[c];
    const T mu = total / T(cols);
    T var = 0;
#pragma omp simd reduction(+ : var)
    for (int64_t c = 0; c < cols; ++c) var += (xr[c] - mu) * (xr[c] - mu);
    const T s = T(1) / std::sqrt(var / T(cols) + eps);
    mean[r] = mu;
    rstd[r] = s;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mu) * s * w[c] + b[c];
  }
}

template <class T>
void layernorm_backward(const T* x, const T* w, const T* mean, const T* rstd, const T* dy, T* dx, T* dw,
                        T* db, int64_t rows, int64_t cols) {
  rows_with_param_grads<T>(rows, cols, dw, db, [&](int64_t r, T* dw_partial, T* db_partial) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    const T* wr = w;  // a local copy, as in rmsnorm_backward
    const T mu = mean[r], s = rstd[r];
    T sum_g = 0, sum_g_xhat = 0;
#pragma omp simd reduction(+ : sum_g, sum_g_xhat)
    for (int64_t c = 0; c < cols; ++c) {
      const T g = dyr[c] * wr[c];
      sum_g += g;
      sum_g_xhat += g * (xr[c] - mu) * s;
    }
    const T mean_g = sum_g / T(cols), mean_g_xhat = sum_g_xhat / T(cols);
    if (dx) {
      T* dxr = dx + r * cols;
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) dxr[c] = s * (dyr[c] * wr[c] - mean_g - (xr[c] - mu) * s * mean_g_xhat);
    }
    if (dw) {
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) dw_partial[c] += dyr[c] * (xr[c] - mu) * s;
    }
    if (db) {
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) db_partial[c] += dyr[c];
    }
  });
}

#define FUSELAB_INSTANTIATE(T)                                                                        \
  template void rmsnorm_forward<T>(const T*, const T*, T*, T*, int64_t, int64_t, T);                  \
  template void rmsnorm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, int64_t, \
                                    int64_t);                                                         \
  template void layernorm_forward<T>(const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, T);  \
  template void layernorm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*,   \
                                      int64_t, int64_t);
FUSELAB_INSTANTIATE(float)
FUSELAB_INSTANTIATE(double)
#undef FUSELAB_INSTANTIATE

}  // namespace fuselab::kernels::cpu
