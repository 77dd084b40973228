// 2-D convolution over NCHW tensors (geometry and index math in kernels/conv2d_geometry.h).
// Per image n:
//
//   forward:          col_n = im2col(x_n);  y_n [K, PQ] = w [K, CRS] col_n [CRS, PQ]
//   backward data:    dcol = w^T dy_n;      dx_n = col2im(dcol)  (the adjoint of im2col: sums overlaps)
//   backward filter:  dw = sum_n dy_n col_n^T
//   fused forward:    pre = conv(x, w) + b[k],  y = act(pre)  (y = pre for Activation::None)
//
// The CPU (kernels/cpu/conv2d.cc) runs float32 on oneDNN's convolutions where FUSELAB_CPU_GEMM
// picks oneDNN, the default, and the kernel is wider than 1x1 over at least 16 input channels,
// where that measured faster (kernels/cpu/onednn_conv.h): the fused forward's bias and activation
// are post-ops, applied in each output tile, unless pre must be kept (then conv + bias into pre
// and one activation pass). Otherwise (float64, FUSELAB_CPU_GEMM=openblas, other geometries) it
// runs im2col and one GEMM per image, with its col buffer in scratch; the fused forward applies
// each image's bias and activation right after its GEMM, while the output is in cache. CUDA
// (kernels/cuda/conv2d.cu) calls cuDNN, with the best algorithm from its heuristics (cached per
// geometry, dtype and math mode); float32 uses FMA math unless TF32 is allowed (kernels/cuda/gemm.h).
// Its fused forward is one cuDNN call for ReLU and the convolution then a bias-and-activation
// kernel otherwise. `pre` may be null (not needed).
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/conv2d_geometry.h"
#include "kernels/kernel.h"

namespace fuselab::kernels {

template <class T>
struct Conv2dForward {
  Conv2dGeometry g;
  const T* x;
  const T* w;
  T* y;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct Conv2dBiasActivationForward {
  Conv2dGeometry g;
  const T* x;
  const T* w;
  const T* b;
  Activation act;
  T* pre;
  T* y;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct Conv2dBackwardData {
  Conv2dGeometry g;
  const T* w;
  const T* dy;
  T* dx;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

template <class T>
struct Conv2dBackwardFilter {
  Conv2dGeometry g;
  const T* x;
  const T* dy;
  T* dw;
  FUSELAB_KERNEL_ENTRY_POINTS;
};

#define FUSELAB_CONV2D_KERNELS(X)                       \
  X(Conv2dForward, FUSELAB_FLOAT_DOUBLE)                \
  X(Conv2dBiasActivationForward, FUSELAB_FLOAT_DOUBLE)  \
  X(Conv2dBackwardData, FUSELAB_FLOAT_DOUBLE)           \
  X(Conv2dBackwardFilter, FUSELAB_FLOAT_DOUBLE)

}  // namespace fuselab::kernels
