// BackwardLinearAdd: MakeExtraOutput then Linear (forward order), in backward.
//   dx = de + dy W: the dgrad GEMM accumulates into a copy of the extra output's grad de
// (beta = 1) instead of writing dy W and adding de in a second pass.  dW = dy^T x.
// Reads LinearSaved {x, W}.
#pragma once

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

class BackwardLinearAdd : public FusedOp {
 public:
  // ops: MakeExtraOutput, Linear
  explicit BackwardLinearAdd(const OpList& ops);
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                               const TensorLists& grad_extra_outputs) override;
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition backward_linear_add_fusion();

}  // namespace fuselab
