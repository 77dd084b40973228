// Softmax over the last dim, as a basic op: y = e^(x - lse(x)),  dx = y * (dy - sum_j dy_j y_j).
// The math is in kernels/softmax.h. It saves its output, which its backward reads.
#pragma once

#include "ops/basic_op.h"

namespace fuselab {

struct SoftmaxSaved {
  Tensor output;
  NamedTensors tensors() const { return {{"output", output}}; }
};

class Softmax : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  Softmax() : BasicOp("Softmax") {}
  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;
};

}  // namespace fuselab
