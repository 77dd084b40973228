#include "ops/basic/swiglu.h"

#include "kernels/cpu/swiglu.h"
#include "kernels/cuda/swiglu.h"
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
  Tensor y = empty(out_shape, x.dtype(), x.device());
  dispatch_floating_on_device(
      "SwiGLU", x,
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cpu::swiglu_forward<T>(x.data<T>(), y.data<T>(), math::rows_of(x), n);
      },
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cuda::swiglu_forward<T>(x.cuda_data<T>(), y.cuda_data<T>(), math::rows_of(x), n, x.device().index);
      });
  if (ctx.requires_backward()) ctx.save<SwiGLUSaved>().input = x;
  return {y, {}};
}

OpBackward SwiGLU::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const Tensor& x = ctx.saved<SwiGLUSaved>(describe()).input;
  Tensor dx = empty_like(x);
  const int64_t rows = math::rows_of(x), n = x.size(-1) / 2;
  dispatch_floating_on_device(
      "SwiGLU backward", x,
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cpu::swiglu_backward<T>(x.data<T>(), dy.data<T>(), dx.data<T>(), rows, n);
      },
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cuda::swiglu_backward<T>(x.cuda_data<T>(), dy.cuda_data<T>(), dx.cuda_data<T>(), rows, n,
                                          x.device().index);
      });
  return {dx, {}, {}};
}

}  // namespace fuselab
