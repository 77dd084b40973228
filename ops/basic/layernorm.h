// LayerNorm over the last dim: y = (x - mean) / sqrt(var + eps) * w + b.
// The math is in kernels/norms.h.
#pragma once

#include "ops/basic_op.h"

namespace fuselab {

struct LayerNormSaved {
  Tensor input;
  Tensor mean;  // [rows]
  Tensor rstd;  // [rows]
};

class LayerNorm : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  explicit LayerNorm(int64_t features, double eps = 1e-5);
  int64_t features() const { return features_; }

  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

 private:
  int64_t features_;
  double eps_;
};

}  // namespace fuselab
