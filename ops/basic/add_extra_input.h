// AddExtraInput: y = x + e for one extra input e of x's shape (a residual add).
//   dx = dy,  de = dy
#pragma once

#include "ops/basic_op.h"
#include "tensor/tensor_math.h"

namespace fuselab {

class AddExtraInput : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }  // tensor_math and views only
  AddExtraInput() : BasicOp("AddExtraInput") {}
  int num_extra_inputs() const override { return 1; }

  OpForward op_forward(OpContext&, const Tensor& x, const std::vector<Tensor>& extra) override {
    check_input(x, -1);
    check(extra.at(0).defined() && extra[0].shape() == x.shape(), describe(), ": extra input ",
          extra[0].defined() ? extra[0].shape() : Shape{}, " must have the input's shape ", x.shape());
    return {math::binary(math::BinaryOp::Add, x, extra[0]), {}};
  }
  OpBackward op_backward(OpContext&, const Tensor& dy, const std::vector<Tensor>&) override {
    return {dy, {dy}, {}};
  }
};

}  // namespace fuselab
