#include "kernels/cpu/softmax.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/partial_sums.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels::cpu {
namespace {

template <class T>
T log_sum_exp(const T* x, int64_t cols) {
  T m = x[0];
  for (int64_t j = 1; j < cols; ++j) m = std::max(m, x[j]);
  T total = 0;
  for (int64_t j = 0; j < cols; ++j) total += std::exp(x[j] - m);
  return m + std::log(total);
}

}  // namespace

template <class T>
void softmax_forward(const T* x, T* y, int64_t rows, int64_t cols) {
#pragma omp parallel for if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T lse = log_sum_exp(x + r * cols, cols);
    for (int64_t j = 0; j < cols; ++j) y[r * cols + j] = std::exp(x[r * cols + j] - lse);
  }
}

template <class T>
void softmax_backward(const T* y, const T* dy, T* dx, int64_t rows, int64_t cols) {
#pragma omp parallel for if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T* yr = y + r * cols;
    const T* dyr = dy + r * cols;
    T* dxr = dx + r * cols;
    T dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j < cols; ++j) dot += dyr[j] * yr[j];
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) dxr[j] = yr[j] * (dyr[j] - dot);
  }
}

template <class T>
void log_softmax_forward(const T* x, T* y, int64_t rows, int64_t cols) {
#pragma omp parallel for if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    const T lse = log_sum_exp(xr, cols);
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) yr[j] = xr[j] - lse;
  }
}

template <class T>
void log_softmax_backward(const T* y, const T* dy, T* dx, int64_t rows, int64_t cols) {
#pragma omp parallel for if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T* yr = y + r * cols;
    const T* dyr = dy + r * cols;
    T total = 0;
#pragma omp simd reduction(+ : total)
    for (int64_t j = 0; j < cols; ++j) total += dyr[j];
    for (int64_t j = 0; j < cols; ++j) dx[r * cols + j] = dyr[j] - std::exp(yr[j]) * total;
  }
}

template <class T>
double cross_entropy_forward(const T* x, const int64_t* labels, T* lse, int64_t rows, int64_t cols,
                             int64_t ignore_index) {
  double total = 0;
  parallel_partial_sums<double>(rows, 1, rows * cols > kParallelGrain, &total, false, [&](int64_t r, double* partial) {
    lse[r] = log_sum_exp(x + r * cols, cols);
    if (labels[r] != ignore_index) partial[0] += double(lse[r] - x[r * cols + labels[r]]);
  });
  return total;
}

template <class T>
void cross_entropy_backward(const T* x, const int64_t* labels, const T* lse, T grad_scale, T* dx,
                            int64_t rows, int64_t cols, int64_t ignore_index) {
#pragma omp parallel for if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    T* dxr = dx + r * cols;
    if (labels[r] == ignore_index) {
      std::fill(dxr, dxr + cols, T(0));
      continue;
    }
    for (int64_t j = 0; j < cols; ++j) dxr[j] = std::exp(x[r * cols + j] - lse[r]) * grad_scale;
    dxr[labels[r]] -= grad_scale;
  }
}

#define FUSELAB_INSTANTIATE(T)                                                                          \
  template void softmax_forward<T>(const T*, T*, int64_t, int64_t);                                     \
  template void softmax_backward<T>(const T*, const T*, T*, int64_t, int64_t);                          \
  template void log_softmax_forward<T>(const T*, T*, int64_t, int64_t);                                 \
  template void log_softmax_backward<T>(const T*, const T*, T*, int64_t, int64_t);                      \
  template double cross_entropy_forward<T>(const T*, const int64_t*, T*, int64_t, int64_t, int64_t);    \
  template void cross_entropy_backward<T>(const T*, const int64_t*, const T*, T, T*, int64_t, int64_t, \
                                          int64_t);
FUSELAB_INSTANTIATE(float)
FUSELAB_INSTANTIATE(double)
#undef FUSELAB_INSTANTIATE

}  // namespace fuselab::kernels::cpu
