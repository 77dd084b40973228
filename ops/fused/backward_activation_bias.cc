#include "ops/fused/backward_activation_bias.h"

#include "kernels/linear_epilogue.h"
#include "ops/basic/activation.h"
#include "ops/basic/bias.h"
#include "ops/basic/linear.h"
#include "ops/fusion_pattern.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

BackwardActivationBias::BackwardActivationBias(const OpList& ops)
    : FusedOp("BackwardActivationBias", ops, Pass::Backward) {}

FusedBackward BackwardActivationBias::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                                                     const TensorLists&) {
  const ActivationOp& act = op<ActivationOp>(1);
  const Tensor& pre = ctxs[1]->saved<ActivationSaved>(act.describe()).input;
  const bool need_db = ctxs[0]->params_require_grad.at(0);
  Tensor dpre = empty_like(pre);
  const int64_t rows = math::rows_of(pre), cols = pre.size(-1);
  Tensor db = need_db ? empty({cols}, pre.dtype(), pre.device()) : Tensor();
  launch_floating<WithBFloat16::Yes>("BackwardActivationBias", pre, [&](auto zero) {
    using T = decltype(zero);
    return kernels::ActivationBiasBackward<T>{act.activation(), pre.ptr<T>(), dy.ptr<T>(), dpre.ptr<T>(),
                                              ptr_or_null<T>(db), rows,        cols};
  });
  return {dpre, TensorLists(2), {{db}, {}}};
}

FusionDefinition backward_activation_bias_fusion() {
  FusionPattern pattern{{slot<Bias>(), slot<ReLU, GELU, SiLU>()},
                        {},
                        [](const OpList& ops) { return std::make_shared<BackwardActivationBias>(ops); }};
  return {"BackwardActivationBias", Pass::Backward, fuse_pattern(std::move(pattern)),
          [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
            return make_fusion_example({std::make_shared<Linear>(w, w, &gen), std::make_shared<Bias>(w, 0.5, &gen),
                                        std::make_shared<SiLU>()},
                                       rows, w, dtype, gen);
          }};
}

}  // namespace fuselab
