// Elementwise kernels over contiguous buffers, and the reductions their gradients need. T is
// float or double, and bfloat16 where the list at the end says so, computed and summed in
// compute_t<T> (float32). Every sum runs in a fixed order, so results are deterministic.
// Kernels: kernels/cpu/elementwise.cc and kernels/cuda/elementwise.cu.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/activation_math.h"
#include "kernels/elementwise_kinds.h"
#include "kernels/kernel.h"
#include "kernels/strided_index.h"

namespace fuselab::kernels {

// out[i] = value, or value * scalar[0] when `scalar` is given: a one-element tensor on the
// kernel's device, read there, so that filling from a device value (the grad of a sum) needs no
// copy to the host. A fill with zero bytes is a memset.
template <class T>
struct Fill {
  const T* scalar;  // may be null
  compute_t<T> value;  // so that value * scalar[0] rounds once
  T* out;
  int64_t n;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// Whether v's bytes are all zero (0.0 but not -0.0): the fill memset can write.
template <class T>
bool is_zero_bytes(const T& v) {
  const unsigned char zero[sizeof(T)] = {};
  return std::memcmp(&v, zero, sizeof(T)) == 0;
}

// out = a (op) b for a of [rows, cols], b broadcast as `broadcast` says.
template <class T>
struct Binary {
  BinaryOp op;
  const T* a;
  const T* b;
  T* out;
  int64_t rows, cols;
  Broadcast broadcast;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// out[i] = x[src.offset(i)] for the n elements of a broadcast result (kernels/strided_index.h).
template <class T>
struct Expand {
  const T* x;
  StridedIndex src;
  T* out;
  int64_t n;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// out[j] = sum_{k < count} grad[kept.offset(j) + summed.offset(k)] for j < n: a broadcast
// operand's grad (kernels/strided_index.h).
template <class T>
struct SumBroadcast {
  const T* grad;
  StridedIndex kept, summed;
  int64_t count;
  T* out;
  int64_t n;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// out = alpha * x
template <class T>
struct Scale {
  const T* x;
  compute_t<T> alpha;
  T* out;
  int64_t n;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// y += alpha * x
template <class T>
struct Axpy {
  compute_t<T> alpha;
  const T* x;
  T* y;
  int64_t n;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// y = act(x)
template <class T>
struct ActivationForward {
  Activation act;
  const T* x;
  T* y;
  int64_t n;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// dx = dy * act'(x)
template <class T>
struct ActivationBackward {
  Activation act;
  const T* x;
  const T* dy;
  T* dx;
  int64_t n;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// out[c] = sum_r x[r, c]: the grad of a broadcast row (a bias grad), or with cols = 1 the sum of
// all elements (summed in double on the CPU).
template <class T>
struct SumRows {
  const T* x;
  int64_t rows, cols;
  T* out;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// *result = sum_i x[i]^2, accumulated in double (a gradient norm); result is one double on the
// kernel's device, so that a caller summing many tensors reads them back in one copy.
template <class T>
struct SumSquares {
  const T* x;
  int64_t n;
  double* result;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// out[r] = factor * sum_c x[r, c]
template <class T>
struct SumCols {
  const T* x;
  int64_t rows, cols;
  T factor;
  T* out;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// out[r, c] = factor * x[r]: SumCols' backward
template <class T>
struct ExpandCols {
  const T* x;
  int64_t rows, cols;
  T factor;
  T* out;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

// out[b, j, i] = x[b, i, j] for x of [batch, rows, cols]
template <class T>
struct Transpose {
  const T* x;
  T* out;
  int64_t batch, rows, cols;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_ELEMENTWISE_KERNELS(X)                 \
  X(Fill, FUSELAB_EVERY_DTYPE)                         \
  X(Binary, FUSELAB_FLOAT_DOUBLE_BFLOAT16)             \
  X(Expand, FUSELAB_FLOAT_DOUBLE_BFLOAT16)             \
  X(SumBroadcast, FUSELAB_FLOAT_DOUBLE_BFLOAT16)       \
  X(Scale, FUSELAB_FLOAT_DOUBLE_BFLOAT16)              \
  X(Axpy, FUSELAB_FLOAT_DOUBLE_BFLOAT16)               \
  X(ActivationForward, FUSELAB_FLOAT_DOUBLE_BFLOAT16)  \
  X(ActivationBackward, FUSELAB_FLOAT_DOUBLE_BFLOAT16) \
  X(SumRows, FUSELAB_FLOAT_DOUBLE_BFLOAT16)            \
  X(SumSquares, FUSELAB_FLOAT_DOUBLE_BFLOAT16)         \
  X(SumCols, FUSELAB_FLOAT_DOUBLE)                     \
  X(ExpandCols, FUSELAB_FLOAT_DOUBLE)                  \
  X(Transpose, FUSELAB_FLOAT_DOUBLE)

}  // namespace fuselab::kernels
