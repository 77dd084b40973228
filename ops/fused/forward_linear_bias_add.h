// ForwardLinearBiasAdd: Linear, an optional Bias and AddExtraInput in one forward call.
//   y = r + x W^T (+ b): the GEMM accumulates into a copy of the residual r (beta = 1), so the
// separate add pass and its extra read and write of y are gone. Fills LinearSaved {x, W}.
#pragma once

#include "ops/fused_op.h"

namespace fuselab {

class ForwardLinearBiasAdd : public FusedOp {
 public:
  // ops: Linear[, Bias], AddExtraInput
  explicit ForwardLinearBiasAdd(const OpList& ops);
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                             const TensorLists& extra_inputs) override;
};

}  // namespace fuselab
