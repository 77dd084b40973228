#include "ops/basic/swiglu.h"

#include "kernels/cpu/swiglu.h"
#include "tensor/dispatch.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {

OpForward SwiGLU::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  check_input(x, -1);
  check(x.size(-1) % 2 == 0, describe(), ": the last dim of input ", x.shape(), " must be even");
  const int64_t n = x.size(-1) / 2;
  Shape out_shape = x.shape();
  out_shape.back() = n;
  Tensor y = empty(out_shape, x.dtype());
  dispatch_floating(x.dtype(), "SwiGLU", [&](auto zero) {
    using T = decltype(zero);
    kernels::cpu::swiglu_forward<T>(x.data<T>(), y.data<T>(), math::rows_of(x), n);
  });
  if (ctx.requires_backward()) ctx.save<SwiGLUSaved>().input = x;
  return {y, {}};
}

OpBackward SwiGLU::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const Tensor& x = ctx.saved<SwiGLUSaved>(describe()).input;
  Tensor dx = empty_like(x);
  dispatch_floating(x.dtype(), "SwiGLU", [&](auto zero) {
    using T = decltype(zero);
    kernels::cpu::swiglu_backward<T>(x.data<T>(), dy.data<T>(), dx.data<T>(), math::rows_of(x), x.size(-1) / 2);
  });
  return {dx, {}, {}};
}

}  // namespace fuselab
