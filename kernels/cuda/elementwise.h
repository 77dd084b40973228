// Elementwise CUDA kernels and the column sums their grads need. Pointers are device pointers
// on `device`; T is float or double, and for the kernels in FUSELAB_CUDA_ELEMENTWISE_BF16_INSTANTIATE
// also bfloat16, computed in compute_t<T> (float32). Each call launches asynchronously on the device's default
// stream (see cuda_check.h) and throws std::runtime_error naming the kernel if the launch fails.
// The formulas are the CPU kernels' (kernels/cpu/elementwise.h, kernels/activation_math.h).
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/bfloat16.h"
#include "kernels/elementwise_kinds.h"
#include "kernels/strided_index.h"

namespace fuselab::kernels::cuda {

// out = a (op) b for a of [rows, cols], b broadcast as `broadcast` says.
template <class T>
void binary(BinaryOp op, const T* a, const T* b, T* out, int64_t rows, int64_t cols, Broadcast broadcast, int device);

// out[i] = x[src.offset(i)] for the n elements of a broadcast result (kernels/strided_index.h).
template <class T>
void expand(const T* x, const StridedIndex& src, T* out, int64_t n, int device);

// out[j] = sum_{k < count} grad[kept.offset(j) + summed.offset(k)] for j < n: one thread per
// output element, summing in compute_t<T> in a fixed order (deterministic).
template <class T>
void sum_broadcast(const T* grad, const StridedIndex& kept, const StridedIndex& summed, int64_t count, T* out,
                   int64_t n, int device);

// out = alpha * x
template <class T>
void scale(const T* x, compute_t<T> alpha, T* out, int64_t n, int device);

// y += alpha * x
template <class T>
void axpy(compute_t<T> alpha, const T* x, T* y, int64_t n, int device);

// y = act(x)
template <class T>
void activation_forward(Activation act, const T* x, T* y, int64_t n, int device);

// dx = dy * act'(x)
template <class T>
void activation_backward(Activation act, const T* x, const T* dy, T* dx, int64_t n, int device);

// out[b] = x[b]^T for x of [batch, rows, cols]
template <class T>
void transpose(const T* x, T* out, int64_t batch, int64_t rows, int64_t cols, int device);

// out[r] = factor * sum_c x[r, c]  (one block per row: a fixed order, deterministic)
template <class T>
void sum_cols(const T* x, int64_t rows, int64_t cols, T factor, T* out, int device);

// out[r, c] = factor * x[r]  (sum_cols's adjoint)
template <class T>
void expand_cols(const T* x, int64_t rows, int64_t cols, T factor, T* out, int device);

// out[c] = sum_r x[r, c], in a fixed order (deterministic). `scratch` holds
// sum_rows_scratch(rows, cols) elements of T.
int64_t sum_rows_scratch(int64_t rows, int64_t cols);
template <class T>
void sum_rows(const T* x, int64_t rows, int64_t cols, T* out, compute_t<T>* scratch, int device);

// The explicit instantiations, for the .cu file and for stubs.cc (T = float, double).
// The kernels that take bfloat16 too (T = float, double, bfloat16) ...
#define FUSELAB_CUDA_ELEMENTWISE_BF16_INSTANTIATE(T)                                              \
  template void binary<T>(BinaryOp, const T*, const T*, T*, int64_t, int64_t, Broadcast, int); \
  template void expand<T>(const T*, const StridedIndex&, T*, int64_t, int);                    \
  template void sum_broadcast<T>(const T*, const StridedIndex&, const StridedIndex&, int64_t, T*, \
                                 int64_t, int);                                                \
  template void scale<T>(const T*, compute_t<T>, T*, int64_t, int);                            \
  template void axpy<T>(compute_t<T>, const T*, T*, int64_t, int);                             \
  template void activation_forward<T>(Activation, const T*, T*, int64_t, int);                  \
  template void activation_backward<T>(Activation, const T*, const T*, T*, int64_t, int);       \
  template void sum_rows<T>(const T*, int64_t, int64_t, T*, compute_t<T>*, int);
// ... and all of them (T = float, double).
#define FUSELAB_CUDA_ELEMENTWISE_INSTANTIATE(T)                                \
  FUSELAB_CUDA_ELEMENTWISE_BF16_INSTANTIATE(T)                                 \
  template void transpose<T>(const T*, T*, int64_t, int64_t, int64_t, int); \
  template void sum_cols<T>(const T*, int64_t, int64_t, T, T*, int);           \
  template void expand_cols<T>(const T*, int64_t, int64_t, T, T*, int);

}  // namespace fuselab::kernels::cuda
