// The CPU bodies of kernels/norms.h: rows in parallel, each row in SIMD loops.
#include "kernels/norms.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/partial_sums.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels {
using namespace cpu;  // isa.h, threading.h, partial_sums.h
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

// One row of each backward (kernels/norms.h), dw and db accumulated into the thread's partials.
template <class T>
[[gnu::always_inline]] inline void backward_row(const RMSNormBackward<T>& k, int64_t r, compute_t<T>* dw_partial,
                                                compute_t<T>*) {
  using C = compute_t<T>;
  // Local copies: GCC does not vectorize loops that read through the struct.
  const int64_t cols = k.cols;
  const T* xr = k.x + r * cols;
  const T* dyr = k.dy + r * cols;
  const T* wr = k.w;
  const C s = k.rstd[r];
  C dot = 0;  // sum_j g_j xhat_j
#pragma omp simd reduction(+ : dot)
  for (int64_t c = 0; c < cols; ++c) dot += dyr[c] * wr[c] * xr[c] * s;
  const C mean_dot = dot / C(cols);
  if (k.dx) {
    T* dxr = k.dx + r * cols;
    if (k.residual_grad) {
      const T* rgr = k.residual_grad + r * cols;
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) dxr[c] = s * (dyr[c] * wr[c] - xr[c] * s * mean_dot) + rgr[c];
    } else {
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) dxr[c] = s * (dyr[c] * wr[c] - xr[c] * s * mean_dot);
    }
  }
  if (k.dw) {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) dw_partial[c] += dyr[c] * xr[c] * s;
  }
}

template <class T>
[[gnu::always_inline]] inline void backward_row(const LayerNormBackward<T>& k, int64_t r, compute_t<T>* dw_partial,
                                                compute_t<T>* db_partial) {
  using C = compute_t<T>;
  const int64_t cols = k.cols;  // local copies, as in RMSNorm's row
  const T* xr = k.x + r * cols;
  const T* dyr = k.dy + r * cols;
  const T* wr = k.w;
  const C mu = k.mean[r], s = k.rstd[r];
  C sum_g = 0, sum_g_xhat = 0;
#pragma omp simd reduction(+ : sum_g, sum_g_xhat)
  for (int64_t c = 0; c < cols; ++c) {
    const C g = C(dyr[c]) * C(wr[c]);
    sum_g += g;
    sum_g_xhat += g * (xr[c] - mu) * s;
  }
  const C mean_g = sum_g / C(cols), mean_g_xhat = sum_g_xhat / C(cols);
  if (k.dx) {
    T* dxr = k.dx + r * cols;
    if (k.residual_grad) {
      const T* rgr = k.residual_grad + r * cols;
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) {
        dxr[c] = s * (dyr[c] * wr[c] - mean_g - (xr[c] - mu) * s * mean_g_xhat) + rgr[c];
      }
    } else {
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) dxr[c] = s * (dyr[c] * wr[c] - mean_g - (xr[c] - mu) * s * mean_g_xhat);
    }
  }
  if (k.dw) {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) dw_partial[c] += dyr[c] * (xr[c] - mu) * s;
  }
  if (k.db) {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) db_partial[c] += C(dyr[c]);
  }
}

// The rows compiled for baseline x86-64, AVX2 and AVX-512 (isa.h), one picked per call: at 4 floats
// an instruction the rows' reductions, not the memory, bounded the backward (about half the copy
// bandwidth on one thread).
template <class K, class C>
void baseline_backward_row(const K& k, int64_t r, C* dw_partial, C* db_partial) {
  backward_row(k, r, dw_partial, db_partial);
}
template <class K, class C>
FUSELAB_TARGET_AVX2 void avx2_backward_row(const K& k, int64_t r, C* dw_partial, C* db_partial) {
  backward_row(k, r, dw_partial, db_partial);
}
template <class K, class C>
FUSELAB_TARGET_AVX512 void avx512_backward_row(const K& k, int64_t r, C* dw_partial, C* db_partial) {
  backward_row(k, r, dw_partial, db_partial);
}

template <class T, class K>
void backward_rows(const K& k, T* dw, T* db) {
  using C = compute_t<T>;
  const auto row = pick_isa(&avx512_backward_row<K, C>, &avx2_backward_row<K, C>, &baseline_backward_row<K, C>);
  rows_with_param_grads<T>(k.rows, k.cols, dw, db,
                           [&](int64_t r, C* dw_partial, C* db_partial) { row(k, r, dw_partial, db_partial); });
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
  backward_rows<T>(*this, dw, nullptr);
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
  backward_rows<T>(*this, dw, db);
}

FUSELAB_NORM_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels
