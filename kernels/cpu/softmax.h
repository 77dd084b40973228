// Row-wise softmax, log-softmax and softmax cross-entropy over x of [rows, cols].
//
//   softmax(x)_j = e^(x_j - m) / sum_k e^(x_k - m),  m = max_k x_k (for stability)
//   log_softmax(x)_j = x_j - lse(x),  lse(x) = m + log sum_k e^(x_k - m)
//   softmax backward:      dx = y * (dy - sum_j dy_j y_j)
//   log_softmax backward:  dx = dy - softmax(x) * sum_j dy_j
//   cross-entropy:         loss_r = lse(x_r) - x_r[label_r];  dx_r = (softmax(x_r) - onehot) * g_r
#pragma once

#include <cstdint>

namespace fuselab::kernels::cpu {

template <class T>
void softmax_forward(const T* x, T* y, int64_t rows, int64_t cols);
template <class T>
void softmax_backward(const T* y, const T* dy, T* dx, int64_t rows, int64_t cols);
template <class T>
void log_softmax_forward(const T* x, T* y, int64_t rows, int64_t cols);
template <class T>
void log_softmax_backward(const T* y, const T* dy, T* dx, int64_t rows, int64_t cols);

// Writes lse[r] and returns the sum of loss_r over rows whose label is not ignore_index.
template <class T>
double cross_entropy_forward(const T* x, const int64_t* labels, T* lse, int64_t rows, int64_t cols,
                             int64_t ignore_index);
// dx_r = (softmax(x_r) - onehot(label_r)) * grad_scale, zero for ignored rows.
template <class T>
void cross_entropy_backward(const T* x, const int64_t* labels, const T* lse, T grad_scale, T* dx,
                            int64_t rows, int64_t cols, int64_t ignore_index);

}  // namespace fuselab::kernels::cpu
