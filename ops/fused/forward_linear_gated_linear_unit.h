// ForwardLinearGatedLinearUnit: Linear, an optional Bias and a gated linear unit (SwiGLU or any of
// its family) in one forward call, the gate and up projections being one Linear of 2n outputs:
//   pre = x W^T (+ b),  y = gate(pre[:, :n]) * pre[:, n:]
// kernels::LinearGatedLinearUnitForward runs it in row panels on the CPU, each panel's GLU while
// its GEMM output is still in L2, and without a backward keeps only one panel of pre. Fills
// LinearSaved {x, W} and GatedLinearUnitSaved {pre}; the basic ops' backwards run unchanged.
#pragma once

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

class ForwardLinearGatedLinearUnit : public FusedOp {
 public:
  // ops: Linear, [Bias,] GatedLinearUnit
  explicit ForwardLinearGatedLinearUnit(const OpList& ops);
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                             const TensorLists& extra_inputs) override;
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition forward_linear_gated_linear_unit_fusion();

}  // namespace fuselab
