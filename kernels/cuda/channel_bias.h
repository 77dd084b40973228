// The fused convolution's epilogue on CUDA (kernels/cuda/conv2d.cu), over [batch, channels, plane]:
//   pre = y + b[k];  y = act(pre), in place (pre may be null). Device pointers on `device`.
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"

namespace fuselab::kernels::cuda {

template <class T>
void channel_bias_activation_forward(Activation act, const T* b, T* y, T* pre, int64_t batch, int64_t channels,
                                     int64_t plane, int device);

}  // namespace fuselab::kernels::cuda
