#include "ops/basic/layernorm.h"

#include "kernels/cpu/norms.h"
#include "kernels/cuda/norms.h"
#include "tensor/dispatch.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {

LayerNorm::LayerNorm(int64_t features, double eps) : BasicOp("LayerNorm"), features_(features), eps_(eps) {
  check(features > 0 && eps >= 0, "LayerNorm: needs features > 0 and eps >= 0, got ", features, ", ", eps);
  add_parameter("weight", ones({features}));
  add_parameter("bias", zeros({features}));
}

OpForward LayerNorm::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  check_input(x, features_);
  const int64_t rows = math::rows_of(x);
  Tensor y = empty_like(x);
  const DType stats = compute_dtype(x.dtype());
  Tensor mean = empty({rows}, stats, x.device()), rstd = empty({rows}, stats, x.device());
  dispatch_floating_on_device<WithBFloat16::Yes>(
      "LayerNorm", x,
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cpu::layernorm_forward<T>(x.data<T>(), parameter(0).data<T>(), parameter(1).data<T>(), y.data<T>(),
                                           mean.data<compute_t<T>>(), rstd.data<compute_t<T>>(), rows, features_,
                                           compute_t<T>(eps_));
      },
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cuda::layernorm_forward<T>(x.cuda_data<T>(), parameter(0).cuda_data<T>(),
                                            parameter(1).cuda_data<T>(), y.cuda_data<T>(),
                                            mean.cuda_data<compute_t<T>>(), rstd.cuda_data<compute_t<T>>(), rows,
                                            features_, compute_t<T>(eps_), x.device().index);
      });
  if (ctx.requires_backward()) ctx.save<LayerNormSaved>() = {x, mean, rstd};
  return {y, {}};
}

OpBackward LayerNorm::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const LayerNormSaved& saved = ctx.saved<LayerNormSaved>(describe());
  Tensor dx = ctx.input_requires_grad ? empty_like(saved.input) : Tensor();
  Tensor dw = ctx.params_require_grad.at(0) ? zeros_like(parameter(0)) : Tensor();
  Tensor db = ctx.params_require_grad.at(1) ? zeros_like(parameter(1)) : Tensor();
  const int64_t rows = math::rows_of(dy);
  dispatch_floating_on_device<WithBFloat16::Yes>(
      "LayerNorm backward", dy,
      [&](auto zero) {
        using T = decltype(zero);
        auto ptr = [](const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
        kernels::cpu::layernorm_backward<T>(saved.input.data<T>(), parameter(0).data<T>(),
                                            saved.mean.data<compute_t<T>>(), saved.rstd.data<compute_t<T>>(),
                                            dy.data<T>(), ptr(dx), ptr(dw), ptr(db), rows, features_);
      },
      [&](auto zero) {
        using T = decltype(zero);
        auto ptr = [](const Tensor& t) { return t.defined() ? t.cuda_data<T>() : nullptr; };
        Tensor scratch =
            empty({kernels::cuda::norm_backward_scratch(rows, features_)}, compute_dtype(dy.dtype()), dy.device());
        kernels::cuda::layernorm_backward<T>(saved.input.cuda_data<T>(), parameter(0).cuda_data<T>(),
                                             saved.mean.cuda_data<compute_t<T>>(),
                                             saved.rstd.cuda_data<compute_t<T>>(), dy.cuda_data<T>(), ptr(dx),
                                             ptr(dw), ptr(db), scratch.cuda_data<compute_t<T>>(), rows, features_,
                                             dy.device().index);
      });
  return {dx, {}, {dw, db}};
}

}  // namespace fuselab
