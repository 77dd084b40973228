// oneDNN convolutions over FuseLab's NCHW float32 tensors (kernels/conv2d_geometry.h):
//
//   forward:           y = act(conv(x, w) + b[k])   (b may be null; act may be Activation::None)
//   backward data:     dx = conv^T(w, dy)           (the adjoint of the forward in x)
//   backward weights:  dw = sum_n dy_n (x) x_n       (the adjoint in w)
//
// oneDNN adds the bias and applies the activation (eltwise post-op) in each output tile before it
// is stored. Each convolution runs in the layouts oneDNN picks for it (channel blocks of 16,
// nChw16c, where the channels allow): the NCHW operands are reordered into them and the output
// back, through scratch memory. The reorders cost a pass over each operand (about 0.5 ms for an
// 8 MB activation on one thread); the blocked direct convolution ran 1.9-2.5x faster than
// oneDNN's own on NCHW, which is im2col + GEMM (bench/RESULTS.md, "oneDNN convolutions").
// Where a convolution should run on oneDNN is kernels/cpu/conv2d.cc's choice. oneDNN's CPU
// convolution has no float64.
//
// A primitive and its reorders are made once per (pass, geometry, bias, activation, threads) and
// cached in the cache the matmuls use (kernels/cpu/onednn_runtime.h); the scratchpad is the caller's scratch.
#pragma once

#include "kernels/activation_math.h"
#include "kernels/conv2d_geometry.h"
#include "kernels/kernel.h"

namespace fuselab::kernels::cpu {

// Each returns true, or false with its output untouched where oneDNN has only its reference
// (scalar) implementation for the geometry, or none at all; the caller then runs im2col + GEMM.
bool onednn_conv_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b, Activation act,
                         float* y, KernelContext& ctx);
bool onednn_conv_backward_data(const Conv2dGeometry& g, const float* w, const float* dy, float* dx, KernelContext& ctx);
bool onednn_conv_backward_weights(const Conv2dGeometry& g, const float* x, const float* dy, float* dw,
                                  KernelContext& ctx);

}  // namespace fuselab::kernels::cpu
