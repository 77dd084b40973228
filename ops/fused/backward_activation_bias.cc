#include "ops/fused/backward_activation_bias.h"

#include "kernels/cpu/bias_activation.h"
#include "ops/basic/activation.h"
#include "ops/basic/bias.h"
#include "tensor/dispatch.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {

BackwardActivationBias::BackwardActivationBias(const OpList& ops)
    : FusedOp("BackwardActivationBias", ops, {Pass::Backward}) {}

FusedBackward BackwardActivationBias::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                                                     const TensorLists&) {
  const ActivationOp& act = op<ActivationOp>(1);
  const Tensor& pre = ctxs[1]->saved<ActivationSaved>(act.describe()).input;
  const bool need_db = ctxs[0]->params_require_grad.at(0);
  Tensor dpre = empty_like(pre);
  Tensor db = need_db ? zeros({pre.size(-1)}, pre.dtype()) : Tensor();
  dispatch_floating(pre.dtype(), "BackwardActivationBias", [&](auto zero) {
    using T = decltype(zero);
    kernels::cpu::activation_bias_backward<T>(act.activation(), pre.data<T>(), dy.data<T>(), dpre.data<T>(),
                                              need_db ? db.data<T>() : nullptr, math::rows_of(pre), pre.size(-1));
  });
  return {dpre, TensorLists(2), {{db}, {}}};
}

}  // namespace fuselab
