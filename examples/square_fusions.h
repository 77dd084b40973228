// A user-defined basic op and user-defined forward and backward fusions for it, registered from
// user code through the same calls the built-in fusions use (examples/custom_fusion.cc runs them).
//
// The basic op is Square (y = x^2). The forward fusion ForwardLinearSquare computes x W^T and
// squares it while the GEMM output is hot, and fills the contexts that the unfused Linear and
// Square backward read. The backward fusion BackwardSquareScale turns Square then ConstantScale
// into one pass: dx = 2 s x dy.
#pragma once

#include "ops/basic_op.h"

namespace fuselab::examples {

// --- a basic op: y = x^2,  dx = 2 x dy -------------------------------------------------------
struct SquareSaved {
  Tensor input;
  NamedTensors tensors() const { return {{"input", input}}; }
};

class Square : public BasicOp {
 public:
  Square() : BasicOp("Square") {}
  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;
};

// Registers ForwardLinearSquare and BackwardSquareScale. Names are unique in the registry, so a
// second call throws fuselab::Error.
void register_square_fusions();

}  // namespace fuselab::examples
