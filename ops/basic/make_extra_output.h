// MakeExtraOutput: y = x and one extra output e = x (a branch of the residual stream).
//   dx = dy + de
#pragma once

#include "ops/basic_op.h"
#include "tensor/tensor_math.h"

namespace fuselab {

class MakeExtraOutput : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }  // tensor_math and views only
  MakeExtraOutput() : BasicOp("MakeExtraOutput") {}
  int num_extra_outputs() const override { return 1; }

  OpForward op_forward(OpContext&, const Tensor& x, const std::vector<Tensor>&) override {
    check_input(x, -1);
    return {x, {x}};
  }
  OpBackward op_backward(OpContext&, const Tensor& dy, const std::vector<Tensor>& grad_extra) override {
    const Tensor& de = grad_extra.at(0);  // undefined when the branch was not used
    return {de.defined() ? math::binary(math::BinaryOp::Add, dy, de) : dy, {}, {}};
  }
};

}  // namespace fuselab
