#include "ops/fused/backward_add_norm.h"

#include "ops/basic/add_extra_input.h"
#include "ops/basic/layernorm.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "ops/fusion_pattern.h"

namespace fuselab {

BackwardAddNorm::BackwardAddNorm(const OpList& ops) : FusedOp("BackwardAddNorm", ops, Pass::Backward) {}

FusedBackward BackwardAddNorm::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                                              const TensorLists& grad_extra_outputs) {
  // The MakeExtraOutput's input needs a grad exactly when the norm's does: it is the norm's dx
  // plus the residual's grad (undefined when the branch was not used), added in the same pass.
  OpBackward norm = op<NormOp>(1).normalize_backward(*ctxs[1], dy, grad_extra_outputs[0].at(0));
  return {norm.grad_input, TensorLists(2), {{}, norm.grad_params}};
}

FusionDefinition backward_add_norm_fusion() {
  FusionPattern pattern{{slot<MakeExtraOutput>(), slot<RMSNorm, LayerNorm>()},
                        {},
                        [](const OpList& ops) { return std::make_shared<BackwardAddNorm>(ops); }};
  return {"BackwardAddNorm", Pass::Backward, fuse_pattern(std::move(pattern)), add_norm_example};
}

FusionExample add_norm_example(int64_t rows, int64_t width, DType dtype, Generator& gen) {
  std::shared_ptr<BasicOp> norm;
  if (gen.next_u64() % 2) {
    norm = std::make_shared<RMSNorm>(width);
  } else {
    norm = std::make_shared<LayerNorm>(width);
  }
  return make_fusion_example({std::make_shared<AddExtraInput>(), std::make_shared<MakeExtraOutput>(), norm}, rows,
                             width, dtype, gen);
}

}  // namespace fuselab
