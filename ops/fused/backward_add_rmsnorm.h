// BackwardAddRMSNorm: MakeExtraOutput then RMSNorm (forward order), in backward.
//   dx = RMSNorm backward(dy) + de  in the same pass over each row (kernels/norms.h),
// where de is the grad of the residual branch. Reads RMSNormSaved {x, rstd}.
#pragma once

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

class BackwardAddRMSNorm : public FusedOp {
 public:
  // ops: MakeExtraOutput, RMSNorm
  explicit BackwardAddRMSNorm(const OpList& ops);
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                               const TensorLists& grad_extra_outputs) override;
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition backward_add_rmsnorm_fusion();

}  // namespace fuselab
