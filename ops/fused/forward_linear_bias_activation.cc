#include "ops/fused/forward_linear_bias_activation.h"

#include "kernels/cpu/linear_epilogue.h"
#include "ops/basic/activation.h"
#include "ops/basic/bias.h"
#include "ops/basic/linear.h"
#include "tensor/dispatch.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {

ForwardLinearBiasActivation::ForwardLinearBiasActivation(const OpList& ops)
    : FusedOp("ForwardLinearBiasActivation", ops, {Pass::Forward}) {}

FusedForward ForwardLinearBiasActivation::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                                                        const TensorLists&) {
  Linear& linear = op<Linear>(0);
  Bias& bias = op<Bias>(1);
  const bool has_activation = basic_ops().size() == 3;
  linear.check_input(x, linear.in_features());

  Shape out_shape = x.shape();
  out_shape.back() = linear.out_features();
  Tensor y = empty(out_shape, x.dtype());
  Tensor pre = has_activation && ctxs[2]->requires_backward() ? empty(out_shape, x.dtype()) : Tensor();
  dispatch_floating(x.dtype(), "ForwardLinearBiasActivation", [&](auto zero) {
    using T = decltype(zero);
    const Activation act = has_activation ? op<ActivationOp>(2).activation() : Activation::ReLU;
    kernels::cpu::linear_bias_activation_forward<T>(
        x.data<T>(), linear.weight().data<T>(), bias.bias().data<T>(), has_activation, act,
        pre.defined() ? pre.data<T>() : nullptr, y.data<T>(), math::rows_of(x), linear.in_features(),
        linear.out_features());
  });
  Linear::save_for_backward(*ctxs[0], x, linear.weight());
  if (has_activation) ActivationOp::save_for_backward(*ctxs[2], pre);
  return {y, TensorLists(basic_ops().size())};
}

}  // namespace fuselab
