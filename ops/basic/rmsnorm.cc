#include "ops/basic/rmsnorm.h"

#include "kernels/norms.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

RMSNorm::RMSNorm(int64_t features, double eps, bool zero_centered_gamma)
    : NormOp("RMSNorm", features, eps, zero_centered_gamma) {}

Tensor RMSNorm::normalize(OpContext& ctx, const Tensor& x, const Tensor& residual, Tensor* sum) {
  const Tensor h = sum_buffer(x, residual);
  const int64_t rows = math::rows_of(x);
  Tensor y = empty_like(x), rstd = empty({rows}, compute_dtype(x.dtype()), x.device());
  const Tensor gamma = this->gamma();
  launch_floating<WithBFloat16::Yes>("RMSNorm", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::RMSNormForward<T>{x.ptr<T>(),        ptr_or_null<T>(residual), ptr_or_null<T>(h),
                                      gamma.ptr<T>(), y.ptr<T>(),               rstd.ptr<compute_t<T>>(),
                                      rows,              features(),               compute_t<T>(eps())};
  });
  if (sum) *sum = h;
  if (ctx.requires_backward()) ctx.save<RMSNormSaved>() = {h.defined() ? h : x, rstd};
  return y;
}

OpBackward RMSNorm::normalize_backward(OpContext& ctx, const Tensor& dy, const Tensor& residual_grad) {
  const RMSNormSaved& saved = ctx.saved<RMSNormSaved>(describe());
  Tensor dx = ctx.input_requires_grad ? empty_like(saved.input) : Tensor();
  Tensor dw = ctx.params_require_grad.at(0) ? empty_like(weight()) : Tensor();
  const Tensor gamma = this->gamma();
  launch_floating<WithBFloat16::Yes>("RMSNorm backward", dy, [&](auto zero) {
    using T = decltype(zero);
    return kernels::RMSNormBackward<T>{saved.input.ptr<T>(),
                                       gamma.ptr<T>(),
                                       saved.rstd.ptr<compute_t<T>>(),
                                       dy.ptr<T>(),
                                       ptr_or_null<T>(residual_grad),
                                       ptr_or_null<T>(dx),
                                       ptr_or_null<T>(dw),
                                       math::rows_of(saved.input),
                                       features()};
  });
  return {dx, {}, {dw}};
}

}  // namespace fuselab
