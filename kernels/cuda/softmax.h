// Row-wise softmax, log-softmax and softmax cross-entropy on CUDA over x of [rows, cols]; the math
// is kernels/cpu/softmax.h's:
//
//   lse(x_r) = m + log sum_j e^(x_rj - m),  m = max_j x_rj
//   softmax(x)_j = e^(x_j - lse);  log_softmax(x)_j = x_j - lse
//   softmax backward:      dx = y * (dy - sum_j dy_j y_j)
//   log_softmax backward:  dx = dy - e^y * sum_j dy_j
//   cross-entropy:         loss_r = lse(x_r) - x_r[label_r];  dx_r = (softmax(x_r) - onehot) * grad_scale
//
// One block per row. For cross-entropy, rows whose label is ignore_index get loss 0 and dx 0, and
// the caller checks that labels are in range. Pointers are device pointers on `device`.
#pragma once

#include <cstdint>

namespace fuselab::kernels::cuda {

template <class T>
void softmax_forward(const T* x, T* y, int64_t rows, int64_t cols, bool log, int device);
// y is the forward's output (softmax, or log-softmax when `log`).
template <class T>
void softmax_backward(const T* y, const T* dy, T* dx, int64_t rows, int64_t cols, bool log, int device);

// Writes lse[r] and row_loss[r]; the loss is the caller's sum of row_loss over counted rows.
template <class T>
void cross_entropy_forward(const T* x, const int64_t* labels, T* lse, T* row_loss, int64_t rows, int64_t cols,
                           int64_t ignore_index, int device);

template <class T>
void cross_entropy_backward(const T* x, const int64_t* labels, const T* lse, T grad_scale, T* dx, int64_t rows,
                            int64_t cols, int64_t ignore_index, int device);

// The explicit instantiations, for the .cu file and for stubs.cc (T = float, double).
#define FUSELAB_CUDA_SOFTMAX_INSTANTIATE(T) \
  template void softmax_forward<T>(const T*, T*, int64_t, int64_t, bool, int);                               \
  template void softmax_backward<T>(const T*, const T*, T*, int64_t, int64_t, bool, int);                   \
  template void cross_entropy_forward<T>(const T*, const int64_t*, T*, T*, int64_t, int64_t, int64_t, int);  \
  template void cross_entropy_backward<T>(const T*, const int64_t*, const T*, T, T*, int64_t, int64_t, int64_t, \
                                          int);

}  // namespace fuselab::kernels::cuda
