// Elementwise kernels over contiguous buffers, and the reductions their gradients need. Each
// takes float32, float64 and bfloat16, the last computed and summed in float32 (compute_t).
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/bfloat16.h"
#include "kernels/elementwise_kinds.h"
#include "kernels/strided_index.h"

namespace fuselab::kernels::cpu {

// out = a (op) b, elementwise.
template <class T>
void binary(BinaryOp op, const T* a, const T* b, T* out, int64_t rows, int64_t cols, Broadcast broadcast);

// out[i] = x[src.offset(i)] for the n elements of a broadcast result (kernels/strided_index.h).
template <class T>
void expand(const T* x, const StridedIndex& src, T* out, int64_t n);

// out[j] = sum_{k < count} grad[kept.offset(j) + summed.offset(k)] for j < n, summed in
// compute_t<T>: a broadcast operand's grad (kernels/strided_index.h).
template <class T>
void sum_broadcast(const T* grad, const StridedIndex& kept, const StridedIndex& summed, int64_t count, T* out,
                   int64_t n);

// out = alpha * x
template <class T>
void scale(const T* x, compute_t<T> alpha, T* out, int64_t n);

// y += alpha * x
template <class T>
void axpy(compute_t<T> alpha, const T* x, T* y, int64_t n);

// out = sum over all n elements
template <class T>
T sum_all(const T* x, int64_t n);

// sum_i x[i]^2, accumulated in double (a gradient norm)
template <class T>
double sum_squares(const T* x, int64_t n);

// out[c] (+)= sum_r x[r, c]: the gradient of a broadcast row (a bias grad).
template <class T>
void sum_rows(const T* x, int64_t rows, int64_t cols, T* out, bool accumulate);

// out[r] = sum_c x[r, c]
template <class T>
void sum_cols(const T* x, int64_t rows, int64_t cols, T* out);

// y = act(x)
template <class T>
void activation_forward(Activation act, const T* x, T* y, int64_t n);

// dx = dy * act'(x)
template <class T>
void activation_backward(Activation act, const T* x, const T* dy, T* dx, int64_t n);

// out[b, j, i] = x[b, i, j] for x of [batch, rows, cols]
template <class T>
void transpose(const T* x, T* out, int64_t batch, int64_t rows, int64_t cols);

}  // namespace fuselab::kernels::cpu
