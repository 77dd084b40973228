// Reshape: y = x viewed with a new shape (one size may be -1).  dx = dy viewed as x's shape.
#pragma once

#include "ops/basic_op.h"

namespace fuselab {

struct ReshapeSaved {
  Shape input_shape;
  NamedTensors tensors() const { return {}; }
};

class Reshape : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }  // tensor_math and views only
  explicit Reshape(Shape shape) : BasicOp("Reshape"), shape_(std::move(shape)) {}

  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override {
    check(x.defined(), describe(), ": undefined input");
    if (ctx.requires_backward()) ctx.save<ReshapeSaved>().input_shape = x.shape();
    return {x.view(shape_, describe()), {}};
  }
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override {
    return {dy.view(ctx.saved<ReshapeSaved>(describe()).input_shape), {}, {}};
  }

 private:
  Shape shape_;
};

}  // namespace fuselab
