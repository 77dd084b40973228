// The CPU bodies of kernels/norms.h: rows in parallel, each row in SIMD loops.
#include "kernels/norms.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/partial_sums.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels {
using namespace cpu;  // threading.h, partial_sums.h
namespace {

// Runs row(r, dw_partial, db_partial) over all rows in parallel, each thread accumulating the
// weight (and bias) grads of its rows privately; the partials are then summed into dw and db in
// thread order (partial_sums.h), so the result is deterministic.
template <class T, class Row>
void rows_with_param_grads(int64_t rows, int64_t cols, T* dw, T* db, Row&& row) {
  using C = compute_t<T>;
  std::vector<C> sums(size_t(2 * cols), C(0));  // [dw | db]
  parallel_partial_sums<C>(rows, 2 * cols, rows * cols > kParallelGrain, sums.data(), false,
                           [&](int64_t r, C* partial) { row(r, partial, partial + cols); });
  for (int64_t c = 0; dw && c < cols; ++c) dw[c] = T(sums[size_t(c)]);
  for (int64_t c = 0; db && c < cols; ++c) db[c] = T(sums[size_t(cols + c)]);
}

// Row r of the norm's input: x's, or the sum x + residual, written to `sum` first (the row then
// stays in cache for the norm's passes).
template <class T>
const T* input_row(const T* x, const T* residual, T* sum, int64_t r, int64_t cols) {
  const T* xr = x + r * cols;
  if (!residual) return xr;
  const T* rr = residual + r * cols;
  T* hr = sum + r * cols;
#pragma omp simd
  for (int64_t c = 0; c < cols; ++c) hr[c] = T(compute_t<T>(xr[c]) + compute_t<T>(rr[c]));
  return hr;
}

}  // namespace

template <class T>
void RMSNormForward<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
#pragma omp parallel for schedule(static) if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = input_row(x, residual, sum, r, cols);
    T* yr = y + r * cols;
    C sum_sq = 0;
#pragma omp simd reduction(+ : sum_sq)
    for (int64_t c = 0; c < cols; ++c) sum_sq += C(xr[c]) * C(xr[c]);
    const C s = C(1) / std::sqrt(sum_sq / C(cols) + C(eps));
    rstd[r] = s;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) yr[c] = xr[c] * s * w[c];
  }
}

template <class T>
void RMSNormBackward<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
  rows_with_param_grads<T>(rows, cols, dw, nullptr, [&](int64_t r, C* dw_partial, C*) {
    // Local copies: GCC does not vectorize loops that read a by-reference capture.
    const T* xr = x + r * cols;
    const T* dyr = dy + r * dy_stride;
    const T* wr = w;
    const C s = rstd[r];
    C dot = 0;  // sum_j g_j xhat_j
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < cols; ++c) dot += dyr[c] * wr[c] * xr[c] * s;
    const C mean_dot = dot / C(cols);
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
void LayerNormForward<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
#pragma omp parallel for schedule(static) if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = input_row(x, residual, sum, r, cols);
    T* yr = y + r * cols;
    C total = 0;
#pragma omp simd reduction(+ : total)
    for (int64_t c = 0; c < cols; ++c) total += C(xr[c]);
    const C mu = total / C(cols);
    C var = 0;
#pragma omp simd reduction(+ : var)
    for (int64_t c = 0; c < cols; ++c) var += (C(xr[c]) - mu) * (C(xr[c]) - mu);
    const C s = C(1) / std::sqrt(var / C(cols) + C(eps));
    mean[r] = mu;
    rstd[r] = s;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mu) * s * w[c] + b[c];
  }
}

template <class T>
void LayerNormBackward<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
  rows_with_param_grads<T>(rows, cols, dw, db, [&](int64_t r, C* dw_partial, C* db_partial) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * dy_stride;
    const T* wr = w;  // a local copy, as in RMSNormBackward
    const C mu = mean[r], s = rstd[r];
    C sum_g = 0, sum_g_xhat = 0;
#pragma omp simd reduction(+ : sum_g, sum_g_xhat)
    for (int64_t c = 0; c < cols; ++c) {
      const C g = C(dyr[c]) * C(wr[c]);
      sum_g += g;
      sum_g_xhat += g * (xr[c] - mu) * s;
    }
    const C mean_g = sum_g / C(cols), mean_g_xhat = sum_g_xhat / C(cols);
    if (dx) {
      T* dxr = dx + r * cols;
      if (residual_grad) {
        const T* rgr = residual_grad + r * cols;
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) {
          dxr[c] = s * (dyr[c] * wr[c] - mean_g - (xr[c] - mu) * s * mean_g_xhat) + rgr[c];
        }
      } else {
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) dxr[c] = s * (dyr[c] * wr[c] - mean_g - (xr[c] - mu) * s * mean_g_xhat);
      }
    }
    if (dw) {
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) dw_partial[c] += dyr[c] * (xr[c] - mu) * s;
    }
    if (db) {
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) db_partial[c] += C(dyr[c]);
    }
  });
}

FUSELAB_NORM_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels
