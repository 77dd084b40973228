// 2-D convolution over NCHW tensors on CUDA through cuDNN, with the contracts of
// kernels/cpu/conv2d.h (geometry in kernels/conv2d_geometry.h).
//
// Each call describes its tensors to cuDNN, takes the best algorithm from cuDNN's heuristics
// (asked once per geometry, dtype and math mode, then cached) and runs it with a per-device
// workspace. float32 convolutions use FMA math (full float32) unless TF32 is allowed
// (kernels/cuda/gemm.h: set_allow_tf32, FUSELAB_ALLOW_TF32=1), as the GEMMs do.
#pragma once

#include <cstdint>

#include "kernels/conv2d_geometry.h"

namespace fuselab::kernels::cuda {

template <class T>
void conv2d_forward(const Conv2dGeometry& g, const T* x, const T* w, T* y, int device);

// y = relu(conv(x, w) + b[k]) in one cuDNN call (cudnnConvolutionBiasActivationForward).
template <class T>
void conv2d_bias_relu_forward(const Conv2dGeometry& g, const T* x, const T* w, const T* b, T* y, int device);

template <class T>
void conv2d_backward_data(const Conv2dGeometry& g, const T* w, const T* dy, T* dx, int device);

// dw, overwritten.
template <class T>
void conv2d_backward_filter(const Conv2dGeometry& g, const T* x, const T* dy, T* dw, int device);

#define FUSELAB_CUDA_CONV2D_INSTANTIATE(T)                                                              \
  template void conv2d_forward<T>(const Conv2dGeometry&, const T*, const T*, T*, int);                  \
  template void conv2d_bias_relu_forward<T>(const Conv2dGeometry&, const T*, const T*, const T*, T*, int); \
  template void conv2d_backward_data<T>(const Conv2dGeometry&, const T*, const T*, T*, int);            \
  template void conv2d_backward_filter<T>(const Conv2dGeometry&, const T*, const T*, T*, int);

}  // namespace fuselab::kernels::cuda
