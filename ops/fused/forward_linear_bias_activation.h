// ForwardLinearBiasActivation: Linear, Bias and an optional ReLU/GELU/SiLU in one forward call.
//   pre = x W^T + b,  y = act(pre)
// After the GEMM, one pass applies the bias and the activation and keeps pre for the backward,
// instead of one pass for each (kernels/cpu/linear_epilogue.h). Fills LinearSaved {x, W} and
// ActivationSaved {pre}.
#pragma once

#include "ops/fused_op.h"

namespace fuselab {

class ForwardLinearBiasActivation : public FusedOp {
 public:
  // ops: Linear, Bias[, ActivationOp]
  explicit ForwardLinearBiasActivation(const OpList& ops);
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                             const TensorLists& extra_inputs) override;
};

}  // namespace fuselab
