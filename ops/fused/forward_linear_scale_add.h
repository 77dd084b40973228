// ForwardLinearScaleAdd (TransformerEngine's): Linear, ConstantScale and AddExtraInput in one forward.
//   y = s x W^T + r: the scale is the GEMM's alpha and the residual r is added by the GEMM itself
// (kernels/matmul.h), instead of a pass for the scale and one for the add. Fills LinearSaved {x, W}.
#pragma once

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

class ForwardLinearScaleAdd : public FusedOp {
 public:
  // ops: Linear, ConstantScale, AddExtraInput
  explicit ForwardLinearScaleAdd(const OpList& ops);
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                             const TensorLists& extra_inputs) override;
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition forward_linear_scale_add_fusion();

}  // namespace fuselab
