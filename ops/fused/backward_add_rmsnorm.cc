#include "ops/fused/backward_add_rmsnorm.h"

#include "ops/basic/add_extra_input.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "ops/fusion_pattern.h"

namespace fuselab {

BackwardAddRMSNorm::BackwardAddRMSNorm(const OpList& ops) : FusedOp("BackwardAddRMSNorm", ops, Pass::Backward) {}

FusedBackward BackwardAddRMSNorm::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                                                 const TensorLists& grad_extra_outputs) {
  // The MakeExtraOutput's input needs a grad exactly when the RMSNorm's does.
  OpBackward norm = op<RMSNorm>(1).backward_with_residual(*ctxs[1], dy, grad_extra_outputs[0].at(0));
  return {norm.grad_input, TensorLists(2), {{}, norm.grad_params}};
}

FusionDefinition backward_add_rmsnorm_fusion() {
  FusionPattern pattern{{slot<MakeExtraOutput>(), slot<RMSNorm>()},
                        {},
                        [](const OpList& ops) { return std::make_shared<BackwardAddRMSNorm>(ops); }};
  return {"BackwardAddRMSNorm", Pass::Backward, fuse_pattern(std::move(pattern)),
          [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
            return make_fusion_example({std::make_shared<AddExtraInput>(), std::make_shared<MakeExtraOutput>(),
                                        std::make_shared<RMSNorm>(w)},
                                       rows, w, dtype, gen);
          }};
}

}  // namespace fuselab
