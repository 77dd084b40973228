#include "ops/basic/rmsnorm.h"

#include "kernels/norms.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
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
  launch_floating<WithBFloat16::Yes>("RMSNorm", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::RMSNormForward<T>{x.ptr<T>(), weight().ptr<T>(), y.ptr<T>(), rstd.ptr<compute_t<T>>(),
                                      rows,       features_,         compute_t<T>(eps_)};
  });
  if (ctx.requires_backward()) ctx.save<RMSNormSaved>() = {x, rstd};
  return {y, {}};
}

OpBackward RMSNorm::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const RMSNormSaved& saved = ctx.saved<RMSNormSaved>(describe());
  Tensor dx = ctx.input_requires_grad ? empty_like(saved.input) : Tensor();
  Tensor dw = ctx.params_require_grad.at(0) ? empty_like(weight()) : Tensor();
  launch_floating<WithBFloat16::Yes>("RMSNorm backward", dy, [&](auto zero) {
    using T = decltype(zero);
    return kernels::RMSNormBackward<T>{saved.input.ptr<T>(),          weight().ptr<T>(),
                                       saved.rstd.ptr<compute_t<T>>(), dy.ptr<T>(),
                                       nullptr,                        ptr_or_null<T>(dx),
                                       ptr_or_null<T>(dw),             math::rows_of(dy),
                                       features_};
  });
  return {dx, {}, {dw}};
}

}  // namespace fuselab
