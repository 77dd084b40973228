// Row-wise softmax, log-softmax and softmax cross-entropy over x of [rows, cols].
//
//   lse(x_r) = m + log sum_j e^(x_rj - m),  m = max_j x_rj (for stability)
//   softmax(x)_j = e^(x_j - lse);  log_softmax(x)_j = x_j - lse
//   softmax backward:      dx = y * (dy - sum_j dy_j y_j)
//   log_softmax backward:  dx = dy - e^y * sum_j dy_j
//   cross-entropy:         loss_r = lse(x_r) - x_r[label_r];  dx_r = (softmax(x_r) - onehot) * dloss / counted
//
// CrossEntropyForwardGrad does the forward and, in the same visit of each row, overwrites the row
// with softmax(x_r) - onehot, unscaled: for a caller whose loss ends the graph, so that dloss /
// counted only scales what it makes of it later (LMHeadCrossEntropy), each exponential is taken
// once and each row read while it is in cache.
// Rows whose label is ignore_index get loss 0, dx 0 and row_counted 0 (the caller sums row_loss
// and row_counted for the mean, on the device). Other labels must be in [0, cols): on the CPU the
// caller checks; the CUDA forward records one out of range in `fault` and does not count its row
// (kernels/index_fault.h). Softmax and log-softmax take bfloat16 rows too, computed in float32 (compute_t);
// cross-entropy takes float32 and float64. Kernels: kernels/cpu/softmax.cc and
// kernels/cuda/softmax.cu (one block per row).
#pragma once

#include <cstdint>

#include "kernels/index_fault.h"
#include "kernels/kernel.h"

namespace fuselab::kernels {

template <class T>
struct SoftmaxForward {
  const T* x;
  T* y;
  int64_t rows, cols;
  bool log;  // log-softmax
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct SoftmaxBackward {
  const T* y;  // the forward's output (softmax, or log-softmax when `log`)
  const T* dy;
  T* dx;
  int64_t rows, cols;
  bool log;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// The per-row results and the scalars are in compute_t<T>: float32 for bfloat16 logits, whose
// losses summed in bfloat16 would keep three digits.
template <class T>
struct CrossEntropyForward {
  const T* x;
  const int64_t* labels;         // [rows]
  compute_t<T>* lse;             // [rows], for the backward
  compute_t<T>* row_loss;        // [rows]
  compute_t<T>* row_counted;     // [rows]: 1 where the row counts toward the mean, else 0
  int64_t rows, cols, ignore_index;
  IndexFault* fault;  // CUDA only
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct CrossEntropyForwardGrad {
  T* x;  // [rows, cols]: the logits in, softmax - onehot out (0 on rows that do not count)
  const int64_t* labels;
  compute_t<T>* lse;
  compute_t<T>* row_loss;
  compute_t<T>* row_counted;
  int64_t rows, cols, ignore_index;
  IndexFault* fault;  // CUDA only
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct CrossEntropyBackward {
  const T* x;
  const int64_t* labels;
  const compute_t<T>* lse;
  const compute_t<T>* dloss;    // the loss's grad: one element, read on the kernel's device
  const compute_t<T>* counted;  // the number of counted rows: one element, on the kernel's device
  T* dx;
  int64_t rows, cols, ignore_index;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_SOFTMAX_KERNELS(X)                  \
  X(SoftmaxForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)  \
  X(SoftmaxBackward, FUSELAB_FLOAT_DOUBLE_BFLOAT16) \
  X(CrossEntropyForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)     \
  X(CrossEntropyForwardGrad, FUSELAB_FLOAT_DOUBLE_BFLOAT16) \
  X(CrossEntropyBackward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)

}  // namespace fuselab::kernels
