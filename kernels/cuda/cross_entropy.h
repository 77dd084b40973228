// Softmax cross-entropy on CUDA over logits x of [rows, cols]; the math is kernels/cpu/softmax.h's:
//
//   lse(x_r) = m + log sum_j e^(x_rj - m),  m = max_j x_rj
//   loss_r = lse(x_r) - x_r[label_r];  dx_r = (softmax(x_r) - onehot(label_r)) * grad_scale
//
// One block per row. Rows whose label is ignore_index get loss 0 and dx 0. Pointers are device
// pointers on `device`; the caller checks that labels are in range.
#pragma once

#include <cstdint>

namespace fuselab::kernels::cuda {

// Writes lse[r] and row_loss[r]; the loss is the caller's sum of row_loss over counted rows.
template <class T>
void cross_entropy_forward(const T* x, const int64_t* labels, T* lse, T* row_loss, int64_t rows, int64_t cols,
                           int64_t ignore_index, int device);

template <class T>
void cross_entropy_backward(const T* x, const int64_t* labels, const T* lse, T grad_scale, T* dx, int64_t rows,
                            int64_t cols, int64_t ignore_index, int device);

// The explicit instantiations, for the .cu file and for stubs.cc (T = float, double).
#define FUSELAB_CUDA_CROSS_ENTROPY_INSTANTIATE(T) \
  template void cross_entropy_forward<T>(const T*, const int64_t*, T*, T*, int64_t, int64_t, int64_t, int);  \
  template void cross_entropy_backward<T>(const T*, const int64_t*, const T*, T, T*, int64_t, int64_t, int64_t, \
                                          int);

}  // namespace fuselab::kernels::cuda
