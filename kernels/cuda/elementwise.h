// The elementwise CUDA kernels that other CUDA bodies reuse (linear_epilogue.cu, gemm.cu): the
// math of kernels/elementwise.h's Binary, Scale and ActivationBackward, on raw device pointers.
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/bfloat16.h"
#include "kernels/elementwise_kinds.h"

namespace fuselab::kernels::cuda {

template <class T>
void binary(BinaryOp op, const T* a, const T* b, T* out, int64_t rows, int64_t cols, Broadcast broadcast, int device);

template <class T>
void scale(const T* x, compute_t<T> alpha, T* out, int64_t n, int device);

template <class T>
void activation_backward(Activation act, const T* x, const T* dy, T* dx, int64_t n, int device);

}  // namespace fuselab::kernels::cuda
