#include "ops/basic/softmax.h"

#include "kernels/softmax.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

OpForward Softmax::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  check_input(x, -1);
  Tensor y = empty_like(x);
  launch_floating<WithBFloat16::Yes>("Softmax", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::SoftmaxForward<T>{x.ptr<T>(), y.ptr<T>(), math::rows_of(x), x.size(-1), false};
  });
  if (ctx.requires_backward()) ctx.save<SoftmaxSaved>().output = y;
  return {y, {}};
}

OpBackward Softmax::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const Tensor& y = ctx.saved<SoftmaxSaved>(describe()).output;
  Tensor dx = empty_like(y);
  launch_floating<WithBFloat16::Yes>("Softmax backward", y, [&](auto zero) {
    using T = decltype(zero);
    return kernels::SoftmaxBackward<T>{y.ptr<T>(), dy.ptr<T>(), dx.ptr<T>(), math::rows_of(y), y.size(-1), false};
  });
  return {dx, {}, {}};
}

}  // namespace fuselab
