// SwiGLU: split the last dim of x into halves a (gate) and b; y = silu(a) * b.
// The math is in kernels/swiglu_math.h; kernels in kernels/cpu and kernels/cuda.
#pragma once

#include "ops/basic_op.h"

namespace fuselab {

struct SwiGLUSaved {
  Tensor input;
  NamedTensors tensors() const { return {{"input", input}}; }
};

class SwiGLU : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  SwiGLU() : BasicOp("SwiGLU") {}
  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;
};

}  // namespace fuselab
