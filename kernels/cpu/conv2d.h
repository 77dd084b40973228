// 2-D convolution over NCHW tensors on the CPU: im2col, then one GEMM per image.
// The geometry and the math are in kernels/conv2d_geometry.h. Per image n:
//
//   forward:          col_n = im2col(x_n);  y_n [K, PQ] = w [K, CRS] col_n [CRS, PQ]
//   backward data:    dcol = w^T dy_n;      dx_n = col2im(dcol)  (the adjoint of im2col: sums overlaps)
//   backward filter:  dw += dy_n col_n^T
//
// `col` is caller-owned scratch of conv2d_scratch(g) elements, so steady-state training
// allocates nothing here (the op takes it from the caching allocator).
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/conv2d_geometry.h"

namespace fuselab::kernels::cpu {

inline int64_t conv2d_scratch(const Conv2dGeometry& g) { return g.patch() * g.out_plane(); }

template <class T>
void conv2d_forward(const Conv2dGeometry& g, const T* x, const T* w, T* y, T* col);

// The fused forward: pre = conv(x, w) + b[k], y = act(pre) (y = pre without an activation).
// Each image's bias and activation run right after its GEMM, while its output is in cache,
// instead of two more passes over the whole output. pre may be null.
template <class T>
void conv2d_bias_activation_forward(const Conv2dGeometry& g, const T* x, const T* w, const T* b,
                                    Activation act, T* pre, T* y, T* col);

template <class T>
void conv2d_backward_data(const Conv2dGeometry& g, const T* w, const T* dy, T* dx, T* col);

// dw = sum over images of dy_n col_n^T (overwritten, not accumulated).
template <class T>
void conv2d_backward_filter(const Conv2dGeometry& g, const T* x, const T* dy, T* dw, T* col);

}  // namespace fuselab::kernels::cpu
