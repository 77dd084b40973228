// Per-channel bias over NCHW tensors on CUDA, seen as [batch, channels, plane]; the contracts of
// kernels/cpu/channel_bias.h, plus the fused convolution's epilogue:
//
//   channel_bias_forward:             y[n, k, i] = x[n, k, i] + b[k]
//   channel_bias_activation_forward:  pre = y + b[k]; y = act(pre), in place (pre may be null)
//   channel_bias_grad:                db[k] = sum_{n, i} dy[n, k, i]  (one block per channel,
//                                     a fixed summation order: deterministic, no atomics)
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"

namespace fuselab::kernels::cuda {

template <class T>
void channel_bias_forward(const T* x, const T* b, T* y, int64_t batch, int64_t channels, int64_t plane, int device);

template <class T>
void channel_bias_activation_forward(Activation act, const T* b, T* y, T* pre, int64_t batch, int64_t channels,
                                     int64_t plane, int device);

template <class T>
void channel_bias_grad(const T* dy, T* db, int64_t batch, int64_t channels, int64_t plane, int device);

#define FUSELAB_CUDA_CHANNEL_BIAS_INSTANTIATE(T)                                                          \
  template void channel_bias_forward<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, int);         \
  template void channel_bias_activation_forward<T>(Activation, const T*, T*, T*, int64_t, int64_t, int64_t, \
                                                   int);                                                  \
  template void channel_bias_grad<T>(const T*, T*, int64_t, int64_t, int64_t, int);

}  // namespace fuselab::kernels::cuda
