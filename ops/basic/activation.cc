#include "ops/basic/activation.h"

#include "tensor/tensor_math.h"

namespace fuselab {

void ActivationOp::save_for_backward(OpContext& ctx, const Tensor& pre_activation) {
  if (ctx.requires_backward()) ctx.save<ActivationSaved>().input = pre_activation;
}

OpForward ActivationOp::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  check_input(x, -1);
  save_for_backward(ctx, x);
  return {math::activation(act_, x), {}};
}

OpBackward ActivationOp::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const ActivationSaved& saved = ctx.saved<ActivationSaved>(describe());
  return {math::activation_backward(act_, saved.input, dy), {}, {}};
}

}  // namespace fuselab
