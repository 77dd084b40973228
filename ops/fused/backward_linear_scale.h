// BackwardLinearScale (TransformerEngine's): Linear then ConstantScale (forward order), in backward.
//   dx = s dy W,  dW = s dy^T x: the scale is both GEMMs' alpha, instead of a pass that scales dy
// first. Reads LinearSaved {x, W}.
#pragma once

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

class BackwardLinearScale : public FusedOp {
 public:
  // ops: Linear, ConstantScale
  explicit BackwardLinearScale(const OpList& ops);
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                               const TensorLists& grad_extra_outputs) override;
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition backward_linear_scale_fusion();

}  // namespace fuselab
