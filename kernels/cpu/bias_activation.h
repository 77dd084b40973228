// Fused bias + activation kernels, the CPU side of the Linear+Bias+Activation fusions.
//
// Forward, in place on a GEMM output that is still in cache:  pre = y + b;  y = act(pre)
// Backward, one pass over dy:  dpre = dy * act'(pre);  dbias += sum_rows dpre
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/bfloat16.h"

namespace fuselab::kernels::cpu {

// y is [rows, cols]; pre (may be null) receives y + b before the activation.
template <class T>
void bias_activation_forward(Activation act, const T* bias, T* y, T* pre, int64_t rows, int64_t cols);

// y is [rows, cols]: y += b (no activation; the bias of ForwardLinearBiasAdd).
template <class T>
void add_bias(const T* bias, T* y, int64_t rows, int64_t cols);

// dpre = dy * act'(pre); dbias (may be null) += column sums of dpre.
template <class T>
void activation_bias_backward(Activation act, const T* pre, const T* dy, T* dpre, T* dbias, int64_t rows,
                              int64_t cols);

}  // namespace fuselab::kernels::cpu
