#include "ops/basic/swiglu.h"

#include "kernels/swiglu.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

OpForward SwiGLU::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  check_input(x, -1);
  check(x.size(-1) % 2 == 0, describe(), ": the last dim of input ", x.shape(), " must be even");
  const int64_t n = x.size(-1) / 2;
  Shape out_shape = x.shape();
  out_shape.back() = n;
  Tensor y = empty(out_shape, x.dtype(), x.device());
  launch_floating("SwiGLU", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::SwiGLUForward<T>{x.ptr<T>(), y.ptr<T>(), math::rows_of(x), n};
  });
  if (ctx.requires_backward()) ctx.save<SwiGLUSaved>().input = x;
  return {y, {}};
}

OpBackward SwiGLU::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const Tensor& x = ctx.saved<SwiGLUSaved>(describe()).input;
  Tensor dx = empty_like(x);
  const int64_t rows = math::rows_of(x), n = x.size(-1) / 2;
  launch_floating("SwiGLU backward", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::SwiGLUBackward<T>{x.ptr<T>(), dy.ptr<T>(), dx.ptr<T>(), rows, n};
  });
  return {dx, {}, {}};
}

}  // namespace fuselab
