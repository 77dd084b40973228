#include "ops/basic/layernorm.h"

#include "kernels/norms.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
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
  launch_floating<WithBFloat16::Yes>("LayerNorm", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::LayerNormForward<T>{x.ptr<T>(),  parameter(0).ptr<T>(),    parameter(1).ptr<T>(),
                                        y.ptr<T>(),  mean.ptr<compute_t<T>>(), rstd.ptr<compute_t<T>>(),
                                        rows,        features_,                compute_t<T>(eps_)};
  });
  if (ctx.requires_backward()) ctx.save<LayerNormSaved>() = {x, mean, rstd};
  return {y, {}};
}

OpBackward LayerNorm::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const LayerNormSaved& saved = ctx.saved<LayerNormSaved>(describe());
  Tensor dx = ctx.input_requires_grad ? empty_like(saved.input) : Tensor();
  Tensor dw = ctx.params_require_grad.at(0) ? empty_like(parameter(0)) : Tensor();
  Tensor db = ctx.params_require_grad.at(1) ? empty_like(parameter(1)) : Tensor();
  launch_floating<WithBFloat16::Yes>("LayerNorm backward", dy, [&](auto zero) {
    using T = decltype(zero);
    return kernels::LayerNormBackward<T>{saved.input.ptr<T>(),
                                         parameter(0).ptr<T>(),
                                         saved.mean.ptr<compute_t<T>>(),
                                         saved.rstd.ptr<compute_t<T>>(),
                                         dy.ptr<T>(),
                                         ptr_or_null<T>(dx),
                                         ptr_or_null<T>(dw),
                                         ptr_or_null<T>(db),
                                         math::rows_of(dy),
                                         features_};
  });
  return {dx, {}, {dw, db}};
}

}  // namespace fuselab
