// ForwardAddNorm: AddExtraInput, MakeExtraOutput and RMSNorm or LayerNorm in one forward call,
// as llm.c fuses the residual add into its layernorm:
//   h = x + r;  y = norm(h)  in one pass over each row (kernels/norms.h), h also passed on as
// MakeExtraOutput's extra output (the residual stream), instead of an add pass and then the norm.
// Fills the norm's saved state with h, so the unfused backward or BackwardAddNorm follows.
#pragma once

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

class ForwardAddNorm : public FusedOp {
 public:
  // ops: AddExtraInput, MakeExtraOutput, RMSNorm or LayerNorm
  explicit ForwardAddNorm(const OpList& ops);
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                             const TensorLists& extra_inputs) override;
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition forward_add_norm_fusion();

}  // namespace fuselab
