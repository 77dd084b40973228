// Bias: y = x + b over the last dim.  dx = dy,  db = sum over rows of dy.
#pragma once

#include "ops/basic_op.h"
#include "tensor/random.h"

namespace fuselab {

class Bias : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }  // tensor_math and views only
  // b = 0, or b ~ U(-init_bound, init_bound) when init_bound > 0 (PyTorch's Linear uses 1/sqrt(in)).
  explicit Bias(int64_t features, double init_bound = 0, Generator* gen = nullptr);
  int64_t features() const { return features_; }
  Tensor& bias() { return parameter(0); }

  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

  static Tensor bias_grad(const Tensor& dy);

 private:
  int64_t features_;
};

}  // namespace fuselab
