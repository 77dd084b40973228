#include "ops/fused/forward_add_norm.h"

#include "ops/basic/add_extra_input.h"
#include "ops/basic/layernorm.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "ops/fused/backward_add_norm.h"  // add_norm_example
#include "ops/fusion_pattern.h"

namespace fuselab {

ForwardAddNorm::ForwardAddNorm(const OpList& ops) : FusedOp("ForwardAddNorm", ops, Pass::Forward) {}

FusedForward ForwardAddNorm::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                                           const TensorLists& extra_inputs) {
  Tensor h;  // x + r, the residual stream that goes on
  const Tensor y = op<NormOp>(2).normalize(*ctxs[2], x, extra_inputs[0].at(0), &h);
  TensorLists extra_outputs(3);
  extra_outputs[1] = {h};
  return {y, extra_outputs};
}

FusionDefinition forward_add_norm_fusion() {
  FusionPattern pattern{{slot<AddExtraInput>(), slot<MakeExtraOutput>(), slot<RMSNorm, LayerNorm>()},
                        {},
                        [](const OpList& ops) { return std::make_shared<ForwardAddNorm>(ops); }};
  return {"ForwardAddNorm", Pass::Forward, fuse_pattern(std::move(pattern)), add_norm_example};
}

}  // namespace fuselab
