// L2Normalization over the last dim, without parameters (TransformerEngine's op, used as QK-norm):
//   y = x / sqrt(sum(x^2) + eps)
// It is RMSNorm with a constant weight: x / sqrt(sum(x^2) + eps) = x / sqrt(mean(x^2) + eps / n)
// / sqrt(n), so it runs RMSNorm's kernels (kernels/norms.h) with eps / n and the weight 1 / sqrt(n),
// and the math stays written once. (In bfloat16 that weight is rounded to bfloat16.)
#pragma once

#include "ops/basic_op.h"

namespace fuselab {

struct L2NormalizationSaved {
  Tensor input;
  Tensor rstd;  // [rows]: 1 / sqrt(mean(x^2) + eps / n)
  NamedTensors tensors() const { return {{"input", input}, {"rstd", rstd}}; }
};

class L2Normalization : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  explicit L2Normalization(double eps = 1e-6);
  double eps() const { return eps_; }
  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

 private:
  double eps_;
};

}  // namespace fuselab
