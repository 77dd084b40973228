#include "ops/basic/layernorm.h"

#include "kernels/norms.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

LayerNorm::LayerNorm(int64_t features, double eps, bool zero_centered_gamma)
    : NormOp("LayerNorm", features, eps, zero_centered_gamma) {
  add_parameter("bias", zeros({features}));
}

Tensor LayerNorm::normalize(OpContext& ctx, const Tensor& x, const Tensor& residual, Tensor* sum) {
  const Tensor h = sum_buffer(x, residual);
  const int64_t rows = math::rows_of(x);
  Tensor y = empty_like(x);
  const DType stats = compute_dtype(x.dtype());
  Tensor mean = empty({rows}, stats, x.device()), rstd = empty({rows}, stats, x.device());
  const Tensor gamma = this->gamma();
  launch_floating<WithBFloat16::Yes>("LayerNorm", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::LayerNormForward<T>{x.ptr<T>(),
                                        ptr_or_null<T>(residual),
                                        ptr_or_null<T>(h),
                                        gamma.ptr<T>(),
                                        bias().ptr<T>(),
                                        y.ptr<T>(),
                                        mean.ptr<compute_t<T>>(),
                                        rstd.ptr<compute_t<T>>(),
                                        rows,
                                        features(),
                                        compute_t<T>(eps())};
  });
  if (sum) *sum = h;
  if (ctx.requires_backward()) ctx.save<LayerNormSaved>() = {h.defined() ? h : x, mean, rstd};
  return y;
}

OpBackward LayerNorm::normalize_backward(OpContext& ctx, const Tensor& dy, const Tensor& residual_grad) {
  const LayerNormSaved& saved = ctx.saved<LayerNormSaved>(describe());
  Tensor dx = ctx.input_requires_grad ? empty_like(saved.input) : Tensor();
  Tensor dw = ctx.params_require_grad.at(0) ? empty_like(weight()) : Tensor();
  Tensor db = ctx.params_require_grad.at(1) ? empty_like(bias()) : Tensor();
  const Tensor gamma = this->gamma();
  launch_floating<WithBFloat16::Yes>("LayerNorm backward", dy, [&](auto zero) {
    using T = decltype(zero);
    return kernels::LayerNormBackward<T>{saved.input.ptr<T>(),
                                         gamma.ptr<T>(),
                                         saved.mean.ptr<compute_t<T>>(),
                                         saved.rstd.ptr<compute_t<T>>(),
                                         dy.ptr<T>(),
                                         ptr_or_null<T>(residual_grad),
                                         ptr_or_null<T>(dx),
                                         ptr_or_null<T>(dw),
                                         ptr_or_null<T>(db),
                                         math::rows_of(saved.input),
                                         features()};
  });
  return {dx, {}, {dw, db}};
}

}  // namespace fuselab
