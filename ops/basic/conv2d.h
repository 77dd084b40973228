// Conv2d: y = conv(x, w) over NCHW tensors, w of shape [K, C, R, R]; no bias (ChannelBias is its
// own op, as Bias is for Linear). Square kernels, one stride and one zero padding for both
// spatial dims, no dilation or groups.
//   y [N, K, P, Q],  dx = conv_transpose(dy, w),  dw = sum_n dy_n im2col(x_n)^T
// The geometry and the math: kernels/conv2d_geometry.h. CPU: im2col + GEMM
// and CUDA: cuDNN, both in kernels/conv2d.h.
#pragma once

#include "kernels/conv2d_geometry.h"
#include "ops/basic_op.h"
#include "tensor/random.h"

namespace fuselab {

struct Conv2dSaved {
  Tensor input;   // x as the op received it
  Tensor weight;  // w as used by the forward
  NamedTensors tensors() const { return {{"input", input}, {"weight", weight}}; }
};

class Conv2d : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  // w ~ U(-1/sqrt(C R R), 1/sqrt(C R R)), as PyTorch's default.
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1, int64_t padding = 0,
         Generator* gen = nullptr);
  int64_t in_channels() const { return in_channels_; }
  int64_t out_channels() const { return out_channels_; }
  Tensor& weight() { return parameter(0); }

  // The geometry of a call on x; throws naming the op unless x is [N, C, H, W] with C matching
  // and H, W large enough for the (padded) kernel.
  kernels::Conv2dGeometry geometry(const Tensor& x) const;
  Shape output_shape(const kernels::Conv2dGeometry& g) const { return {g.batch, g.out_channels, g.out_h(), g.out_w()}; }
  // Fills the context as Conv2d's backward expects it.
  static void save_for_backward(OpContext& ctx, const Tensor& x, const Tensor& weight);

  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

 private:
  int64_t in_channels_, out_channels_, kernel_, stride_, padding_;
};

}  // namespace fuselab
