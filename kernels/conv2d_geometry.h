// The sizes of one 2-D convolution over NCHW tensors, shared by the CPU and CUDA kernels.
//
//   x [N, C, H, W]  *  w [K, C, R, S]  ->  y [N, K, P, Q]
//   P = (H + 2 pad - R) / stride + 1,   Q = (W + 2 pad - S) / stride + 1
//   y[n, k, p, q] = sum_{c, r, s} w[k, c, r, s] * x[n, c, p*stride - pad + r, q*stride - pad + s]
//
// (zero outside the image). Seen per image as a GEMM, with the "column" matrix
// col[(c, r, s), (p, q)] = x[n, c, p*stride - pad + r, q*stride - pad + s]  (im2col):
//   y_n [K, PQ] = w [K, CRS] col_n [CRS, PQ]
#pragma once

#include <cstdint>

namespace fuselab::kernels {

struct Conv2dGeometry {
  int64_t batch, in_channels, height, width;  // N, C, H, W
  int64_t out_channels, kernel_h, kernel_w;   // K, R, S
  int64_t stride = 1, padding = 0;

  int64_t out_h() const { return (height + 2 * padding - kernel_h) / stride + 1; }  // P
  int64_t out_w() const { return (width + 2 * padding - kernel_w) / stride + 1; }   // Q
  int64_t out_plane() const { return out_h() * out_w(); }                           // PQ
  int64_t in_plane() const { return height * width; }                               // HW
  int64_t patch() const { return in_channels * kernel_h * kernel_w; }              // CRS
};

}  // namespace fuselab::kernels
