#include "ops/fused/backward_add_rmsnorm.h"

#include "kernels/norms.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "ops/fusion_pattern.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

BackwardAddRMSNorm::BackwardAddRMSNorm(const OpList& ops) : FusedOp("BackwardAddRMSNorm", ops, Pass::Backward) {}

FusedBackward BackwardAddRMSNorm::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                                                 const TensorLists& grad_extra_outputs) {
  // The MakeExtraOutput's input needs a grad exactly when the RMSNorm's does: it is the norm's
  // dx plus the residual's grad, added in the same pass.
  RMSNorm& norm = op<RMSNorm>(1);
  const OpContext& ctx = *ctxs[1];
  const RMSNormSaved& saved = ctx.saved<RMSNormSaved>(norm.describe());
  const Tensor& residual_grad = grad_extra_outputs[0].at(0);
  Tensor dx = ctx.input_requires_grad ? empty_like(saved.input) : Tensor();
  Tensor dw = ctx.params_require_grad.at(0) ? empty_like(norm.weight()) : Tensor();
  launch_floating<WithBFloat16::Yes>("BackwardAddRMSNorm", dy, [&](auto zero) {
    using T = decltype(zero);
    return kernels::RMSNormBackward<T>{saved.input.ptr<T>(),          norm.weight().ptr<T>(),
                                       saved.rstd.ptr<compute_t<T>>(), dy.ptr<T>(),
                                       ptr_or_null<T>(residual_grad),  ptr_or_null<T>(dx),
                                       ptr_or_null<T>(dw),             math::rows_of(dy),
                                       norm.features()};
  });
  return {dx, TensorLists(2), {{}, {dw}}};
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
