// GroupedMlp: a mixture of experts' MLP, GroupedLinear (width -> 2 hidden), a gated linear unit
// (SwiGLU or any of its family) and GroupedLinear (hidden -> width), as one joint forward-backward
// op that keeps only the gate/up product u for backward (the unfused ops keep u and the GLU's
// output for every expert). On the CPU each expert runs its whole chain before the next, so the
// GLU's output and the backward's hidden grads live only in a buffer of one expert's rows; on CUDA
// each step runs for all experts at once, as grouped GEMMs (kernels/grouped_mlp.h).
// The permute before it and the unpermute after it stay the basic ops they are: a GEMM takes its
// rows contiguous, so the gather and the weighted scatter are one pass each either way.
#pragma once

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

struct GroupedMlpSaved {
  Tensor input;  // [rows, width]
  Tensor pre;    // u [rows, 2 hidden]
  Tensor up_weight, down_weight;
  std::vector<int64_t> sizes;
  NamedTensors tensors() const {
    return {{"input", input}, {"pre", pre}, {"up_weight", up_weight}, {"down_weight", down_weight}};
  }
};

class GroupedMlp : public FusedOp {
 public:
  // ops: GroupedLinear, GatedLinearUnit, GroupedLinear
  explicit GroupedMlp(const OpList& ops);
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                             const TensorLists& extra_inputs) override;
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                               const TensorLists& grad_extra_outputs) override;
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition grouped_mlp_fusion();

}  // namespace fuselab
