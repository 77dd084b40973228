// ForwardLinearBiasActivation: Linear, Bias and an optional ReLU/GELU/SiLU in one forward call.
//   pre = x W^T + b,  y = act(pre)
// CPU: after the GEMM, one pass applies the bias and the activation and keeps pre for the
// backward, instead of one pass for each. CUDA: one cuBLASLt call
// with a bias, bias + ReLU or bias + GELU (aux = pre) epilogue where cuBLASLt has it
// (both in kernels/linear_epilogue.h). Fills LinearSaved {x, W} and ActivationSaved {pre}, or {y}
// for ReLU (see ActivationSaved).
#pragma once

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

class ForwardLinearBiasActivation : public FusedOp {
 public:
  // ops: Linear, Bias[, ActivationOp]
  explicit ForwardLinearBiasActivation(const OpList& ops);
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                             const TensorLists& extra_inputs) override;
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition forward_linear_bias_activation_fusion();

}  // namespace fuselab
