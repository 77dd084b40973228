// ConstantScale: y = s x for a fixed s.  dx = s dy
#pragma once

#include "ops/basic_op.h"
#include "tensor/tensor_math.h"

namespace fuselab {

class ConstantScale : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }  // tensor_math and views only
  explicit ConstantScale(double scale) : BasicOp("ConstantScale"), scale_(scale) {}
  double scale() const { return scale_; }

  OpForward op_forward(OpContext&, const Tensor& x, const std::vector<Tensor>&) override {
    check_input(x, -1);
    return {math::scaled(x, scale_), {}};
  }
  OpBackward op_backward(OpContext&, const Tensor& dy, const std::vector<Tensor>&) override {
    return {math::scaled(dy, scale_), {}, {}};
  }

 private:
  double scale_;
};

}  // namespace fuselab
