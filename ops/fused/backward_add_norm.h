// BackwardAddNorm: MakeExtraOutput then RMSNorm or LayerNorm (forward order), in backward.
//   dx = norm backward(dy) + de  in the same pass over each row (kernels/norms.h),
// where de is the grad of the residual branch. Reads the norm's own saved state.
#pragma once

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

class BackwardAddNorm : public FusedOp {
 public:
  // ops: MakeExtraOutput, RMSNorm or LayerNorm
  explicit BackwardAddNorm(const OpList& ops);
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                               const TensorLists& grad_extra_outputs) override;
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition backward_add_norm_fusion();

// AddExtraInput, MakeExtraOutput and an RMSNorm or a LayerNorm (drawn from gen): the example model
// of both add-and-norm fusions.
FusionExample add_norm_example(int64_t rows, int64_t width, DType dtype, Generator& gen);

}  // namespace fuselab
