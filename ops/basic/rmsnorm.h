// RMSNorm over the last dim with a learnable weight: y = x / sqrt(mean(x^2) + eps) * w.
// The math is in kernels/norms.h.
#pragma once

#include "ops/basic/norm_op.h"

namespace fuselab {

struct RMSNormSaved {
  Tensor input;  // the norm's input: x, or x + residual when fused with the add
  Tensor rstd;   // [rows]: 1 / sqrt(mean(x^2) + eps)
  NamedTensors tensors() const { return {{"input", input}, {"rstd", rstd}}; }
};

class RMSNorm : public NormOp {
 public:
  explicit RMSNorm(int64_t features, double eps = 1e-6, bool zero_centered_gamma = false);

  Tensor normalize(OpContext& ctx, const Tensor& x, const Tensor& residual, Tensor* sum) override;
  OpBackward normalize_backward(OpContext& ctx, const Tensor& dy, const Tensor& residual_grad) override;
};

}  // namespace fuselab
