// SwiGLU on CUDA, the contract of kernels/cpu/swiglu.h (math in kernels/swiglu_math.h):
// x is [rows, 2n] = [a | b], y = silu(a) * b is [rows, n].
#pragma once

#include <cstdint>

namespace fuselab::kernels::cuda {

template <class T>
void swiglu_forward(const T* x, T* y, int64_t rows, int64_t n, int device);

template <class T>
void swiglu_backward(const T* x, const T* dy, T* dx, int64_t rows, int64_t n, int device);

#define FUSELAB_CUDA_SWIGLU_INSTANTIATE(T)                                  \
  template void swiglu_forward<T>(const T*, T*, int64_t, int64_t, int); \
  template void swiglu_backward<T>(const T*, const T*, T*, int64_t, int64_t, int);

}  // namespace fuselab::kernels::cuda
