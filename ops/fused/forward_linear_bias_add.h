// ForwardLinearBiasAdd: Linear, an optional Bias and AddExtraInput in one forward call.
//   y = x W^T (+ b) + r: after the GEMM, one pass adds the bias and the residual r, instead of
// one pass for each (kernels/linear_epilogue.h). Fills LinearSaved {x, W}.
#pragma once

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

class ForwardLinearBiasAdd : public FusedOp {
 public:
  // ops: Linear[, Bias], AddExtraInput
  explicit ForwardLinearBiasAdd(const OpList& ops);
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                             const TensorLists& extra_inputs) override;
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition forward_linear_bias_add_fusion();

}  // namespace fuselab
