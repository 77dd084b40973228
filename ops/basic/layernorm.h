// LayerNorm over the last dim: y = (x - mean) / sqrt(var + eps) * w + b.
// The math is in kernels/norms.h.
#pragma once

#include "ops/basic/norm_op.h"

namespace fuselab {

struct LayerNormSaved {
  Tensor input;  // the norm's input: x, or x + residual when fused with the add
  Tensor mean;   // [rows]
  Tensor rstd;   // [rows]
  NamedTensors tensors() const { return {{"input", input}, {"mean", mean}, {"rstd", rstd}}; }
};

class LayerNorm : public NormOp {
 public:
  explicit LayerNorm(int64_t features, double eps = 1e-5, bool zero_centered_gamma = false);
  Tensor& bias() { return parameter(1); }

  Tensor normalize(OpContext& ctx, const Tensor& x, const Tensor& residual, Tensor* sum) override;
  OpBackward normalize_backward(OpContext& ctx, const Tensor& dy, const Tensor& residual_grad) override;
};

}  // namespace fuselab
