// Identity: y = x.  dx = dy
#pragma once

#include "ops/basic_op.h"

namespace fuselab {

class Identity : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }  // tensor_math and views only
  Identity() : BasicOp("Identity") {}
  OpForward op_forward(OpContext&, const Tensor& x, const std::vector<Tensor>&) override {
    check(x.defined(), describe(), ": undefined input");
    return {x, {}};
  }
  OpBackward op_backward(OpContext&, const Tensor& dy, const std::vector<Tensor>&) override { return {dy, {}, {}}; }
};

}  // namespace fuselab
