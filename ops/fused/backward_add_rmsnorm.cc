#include "ops/fused/backward_add_rmsnorm.h"

#include "ops/basic/rmsnorm.h"

namespace fuselab {

BackwardAddRMSNorm::BackwardAddRMSNorm(const OpList& ops) : FusedOp("BackwardAddRMSNorm", ops, {Pass::Backward}) {}

FusedBackward BackwardAddRMSNorm::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                                                 const TensorLists& grad_extra_outputs) {
  // The MakeExtraOutput's input needs a grad exactly when the RMSNorm's does.
  OpBackward norm = op<RMSNorm>(1).backward_with_residual(*ctxs[1], dy, grad_extra_outputs[0].at(0));
  return {norm.grad_input, TensorLists(2), {{}, norm.grad_params}};
}

}  // namespace fuselab
