// The CPU epilogue passes of the fused Linear ops (kernels/cpu/linear_epilogue.cc), in place on a
// GEMM output that is still in cache:  pre = y + b;  y = act(pre).
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

}  // namespace fuselab::kernels::cpu
