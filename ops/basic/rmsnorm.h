// RMSNorm over the last dim with a learnable weight: y = x / sqrt(mean(x^2) + eps) * w.
// The math is in kernels/norms.h.
#pragma once

#include "ops/basic_op.h"

namespace fuselab {

struct RMSNormSaved {
  Tensor input;
  Tensor rstd;  // [rows]: 1 / sqrt(mean(x^2) + eps)
};

class RMSNorm : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  explicit RMSNorm(int64_t features, double eps = 1e-6);
  int64_t features() const { return features_; }
  double eps() const { return eps_; }
  Tensor& weight() { return parameter(0); }

  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

 private:
  int64_t features_;
  double eps_;
};

}  // namespace fuselab
