// BackwardActivationBias: Bias then ReLU/GELU/SiLU (forward order), in backward.
//   dpre = dy * act'(pre),  db = sum over rows of dpre,  dx = dpre
// in one pass over dy (kernels/linear_epilogue.h). Reads ActivationSaved {pre}.
#pragma once

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

class BackwardActivationBias : public FusedOp {
 public:
  // ops: Bias, ActivationOp
  explicit BackwardActivationBias(const OpList& ops);
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                               const TensorLists& grad_extra_outputs) override;
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition backward_activation_bias_fusion();

}  // namespace fuselab
