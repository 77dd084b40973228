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

// What a fused op that ends in the add checks: the residual is defined and of the output's shape,
// x's dtype and x's device. Throws fuselab::Error naming `op`.
inline void check_residual(const std::string& op, const Tensor& residual, const Shape& output_shape,
                           const Tensor& x) {
  check(residual.defined() && residual.shape() == output_shape && residual.dtype() == x.dtype() &&
            residual.device() == x.device(),
        op, ": extra input ", residual.defined() ? residual.shape() : Shape{}, " must match the output ", output_shape,
        " ", x.dtype(), " on ", x.device());
}

}  // namespace fuselab
