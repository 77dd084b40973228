#include "ops/basic/rmsnorm.h"

#include "kernels/cpu/norms.h"
#include "kernels/cuda/norms.h"
#include "tensor/dispatch.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {

RMSNorm::RMSNorm(int64_t features, double eps) : BasicOp("RMSNorm"), features_(features), eps_(eps) {
  check(features > 0 && eps >= 0, "RMSNorm: needs features > 0 and eps >= 0, got ", features, ", ", eps);
  add_parameter("weight", ones({features}));
}

OpForward RMSNorm::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  check_input(x, features_);
  const int64_t rows = math::rows_of(x);
  Tensor y = empty_like(x), rstd = empty({rows}, compute_dtype(x.dtype()), x.device());
  dispatch_floating_on_device<WithBFloat16::Yes>(
      "RMSNorm", x,
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cpu::rmsnorm_forward<T>(x.data<T>(), weight().data<T>(), y.data<T>(),
                                         rstd.data<compute_t<T>>(), rows, features_, compute_t<T>(eps_));
      },
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cuda::rmsnorm_forward<T>(x.cuda_data<T>(), weight().cuda_data<T>(), y.cuda_data<T>(),
                                          rstd.cuda_data<compute_t<T>>(), rows, features_, compute_t<T>(eps_),
                                          x.device().index);
      });
  if (ctx.requires_backward()) ctx.save<RMSNormSaved>() = {x, rstd};
  return {y, {}};
}

OpBackward RMSNorm::backward_with_residual(OpContext& ctx, const Tensor& dy, const Tensor& residual_grad) {
  const RMSNormSaved& saved = ctx.saved<RMSNormSaved>(describe());
  const bool need_dw = ctx.params_require_grad.at(0);
  Tensor dx = ctx.input_requires_grad ? empty_like(saved.input) : Tensor();
  Tensor dw = need_dw ? zeros_like(weight()) : Tensor();
  const int64_t rows = math::rows_of(dy);
  dispatch_floating_on_device<WithBFloat16::Yes>(
      "RMSNorm backward", dy,
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cpu::rmsnorm_backward<T>(saved.input.data<T>(), weight().data<T>(), saved.rstd.data<compute_t<T>>(),
                                          dy.data<T>(), residual_grad.defined() ? residual_grad.data<T>() : nullptr,
                                          dx.defined() ? dx.data<T>() : nullptr, need_dw ? dw.data<T>() : nullptr,
                                          rows, features_);
      },
      [&](auto zero) {
        using T = decltype(zero);
        Tensor scratch =
            empty({kernels::cuda::norm_backward_scratch(rows, features_)}, compute_dtype(dy.dtype()), dy.device());
        kernels::cuda::rmsnorm_backward<T>(saved.input.cuda_data<T>(), weight().cuda_data<T>(),
                                           saved.rstd.cuda_data<compute_t<T>>(), dy.cuda_data<T>(),
                                           residual_grad.defined() ? residual_grad.cuda_data<T>() : nullptr,
                                           dx.defined() ? dx.cuda_data<T>() : nullptr,
                                           need_dw ? dw.cuda_data<T>() : nullptr, scratch.cuda_data<compute_t<T>>(),
                                           rows, features_, dy.device().index);
      });
  return {dx, {}, {dw}};
}

OpBackward RMSNorm::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  return backward_with_residual(ctx, dy, Tensor());
}

}  // namespace fuselab
