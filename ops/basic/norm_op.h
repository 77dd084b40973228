// NormOp: what RMSNorm and LayerNorm share, so that the add-and-norm fusions
// (ops/fused/forward_add_norm.h, backward_add_norm.h) drive either through one interface, with
// the math in the norm's own kernels (kernels/norms.h):
//
//   normalize(ctx, x, residual, sum):  y = norm(x + residual), the sum x + residual into *sum
//                                      (residual undefined: y = norm(x)); saves for backward
//   normalize_backward(ctx, dy, de):   dx = norm backward(dy) + de (de undefined: + 0), and the
//                                      parameter grads
//
// op_forward and op_backward are these without the residual.
//
// zero_centered_gamma (TransformerEngine's option): the weight w is stored as gamma - 1, starts at
// 0, and the norm scales by 1 + w, so weight decay pulls gamma toward 1 instead of 0. The kernels
// take the scale of the input's dtype, so in bfloat16 1 + w is rounded to bfloat16 before it
// scales; the weight's grad is the same either way (d(1 + w)/dw = 1).
#pragma once

#include "ops/basic_op.h"

namespace fuselab {

class NormOp : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  int64_t features() const { return features_; }
  double eps() const { return eps_; }
  Tensor& weight() { return parameter(0); }
  bool zero_centered_gamma() const { return zero_centered_gamma_; }
  // What the kernels scale by: the weight, or 1 + the weight.
  Tensor gamma();

  virtual Tensor normalize(OpContext& ctx, const Tensor& x, const Tensor& residual, Tensor* sum) = 0;
  virtual OpBackward normalize_backward(OpContext& ctx, const Tensor& dy, const Tensor& residual_grad) = 0;

  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override {
    return {normalize(ctx, x, Tensor(), nullptr), {}};
  }
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override {
    return normalize_backward(ctx, dy, Tensor());
  }

 protected:
  NormOp(std::string type, int64_t features, double eps, bool zero_centered_gamma);
  // x + residual's shape, dtype and device must be x's; returns the sum's buffer (undefined
  // without a residual).
  Tensor sum_buffer(const Tensor& x, const Tensor& residual) const;

 private:
  int64_t features_;
  double eps_;
  bool zero_centered_gamma_;
};

}  // namespace fuselab
