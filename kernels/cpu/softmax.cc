// The CPU bodies of kernels/softmax.h: rows in parallel. The exponentials are exp_approx's
// (kernels/activation_math.h: in float about 1 ulp down to e^-87 and 0 below it, so a masked -inf
// score is exactly 0; std::exp in double), whose loops vectorize where glibc's expf is a call per
// element.
#include "kernels/softmax.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/activation_math.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels {
using namespace cpu;  // threading.h
namespace {

// In compute_t<T>: float32 for bfloat16 rows.
template <class T>
compute_t<T> log_sum_exp(const T* x, int64_t cols) {
  using C = compute_t<T>;
  C m = C(x[0]);
  for (int64_t j = 1; j < cols; ++j) m = std::max(m, C(x[j]));
  C total = 0;
#pragma omp simd reduction(+ : total)
  for (int64_t j = 0; j < cols; ++j) total += exp_approx(C(x[j]) - m);
  return m + std::log(total);
}

}  // namespace

template <class T>
void SoftmaxForward<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
#pragma omp parallel for if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    const C lse = log_sum_exp(xr, cols);
    if (log) {
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j) yr[j] = T(C(xr[j]) - lse);
    } else {
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j) yr[j] = T(exp_approx(C(xr[j]) - lse));
    }
  }
}

template <class T>
void SoftmaxBackward<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
#pragma omp parallel for if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T* yr = y + r * cols;
    const T* dyr = dy + r * cols;
    T* dxr = dx + r * cols;
    if (log) {
      C total = 0;
#pragma omp simd reduction(+ : total)
      for (int64_t j = 0; j < cols; ++j) total += C(dyr[j]);
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j) dxr[j] = T(C(dyr[j]) - exp_approx(C(yr[j])) * total);
    } else {
      C dot = 0;
#pragma omp simd reduction(+ : dot)
      for (int64_t j = 0; j < cols; ++j) dot += C(dyr[j]) * C(yr[j]);
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j) dxr[j] = T(C(yr[j]) * (C(dyr[j]) - dot));
    }
  }
}

template <class T>
void CrossEntropyForward<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
#pragma omp parallel for if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const bool counted = labels[r] != ignore_index;  // the caller checked the others are in range
    lse[r] = log_sum_exp(x + r * cols, cols);
    row_loss[r] = counted ? lse[r] - C(x[r * cols + labels[r]]) : C(0);
    row_counted[r] = counted ? C(1) : C(0);
  }
}

// As log_sum_exp, but each e^(x_j - m) is kept, so the softmax is e / sum with no second
// exponential: in the row itself, or for bfloat16 rows in a float32 row of the thread's own.
template <class T>
void CrossEntropyForwardGrad<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
#pragma omp parallel if (rows * cols > kParallelGrain)
  {
    std::vector<C> widened(std::is_same_v<T, C> ? 0 : size_t(cols));
#pragma omp for
    for (int64_t r = 0; r < rows; ++r) {
      T* xr = x + r * cols;
      C* e = widened.empty() ? reinterpret_cast<C*>(xr) : widened.data();
      const bool counted = labels[r] != ignore_index;  // the caller checked the others are in range
      const C picked = counted ? C(xr[labels[r]]) : C(0);
      C m = C(xr[0]);
      for (int64_t j = 1; j < cols; ++j) m = std::max(m, C(xr[j]));
      C total = 0;
#pragma omp simd reduction(+ : total)
      for (int64_t j = 0; j < cols; ++j) total += e[j] = exp_approx(C(xr[j]) - m);
      lse[r] = m + std::log(total);
      row_loss[r] = counted ? lse[r] - picked : C(0);
      row_counted[r] = counted ? C(1) : C(0);
      const C inverse = counted ? C(1) / total : C(0);
      const C picked_p = counted ? e[labels[r]] * inverse : C(0);
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j) xr[j] = T(e[j] * inverse);
      if (counted) xr[labels[r]] = T(picked_p - C(1));
    }
  }
}

template <class T>
void CrossEntropyBackward<T>::cpu(KernelContext&) const {
  using C = compute_t<T>;
  const C grad_scale = *dloss / *counted;
#pragma omp parallel for if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    T* dxr = dx + r * cols;
    if (labels[r] == ignore_index) {
      std::fill(dxr, dxr + cols, T(0));
      continue;
    }
    const T* xr = x + r * cols;
    const C row_lse = lse[r];
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) dxr[j] = T(exp_approx(C(xr[j]) - row_lse) * grad_scale);
    dxr[labels[r]] = T(exp_approx(C(xr[labels[r]]) - row_lse) * grad_scale - grad_scale);
  }
}

FUSELAB_SOFTMAX_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels
