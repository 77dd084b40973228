#include "ops/basic/l2_normalization.h"

#include <cmath>

#include "kernels/norms.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {
namespace {

// RMSNorm's weight that turns its mean into L2Normalization's sum.
Tensor inverse_sqrt_n(const Tensor& x) {
  const int64_t n = x.size(-1);
  return full({n}, 1.0 / std::sqrt(double(n)), x.dtype(), x.device());
}

}  // namespace

L2Normalization::L2Normalization(double eps) : BasicOp("L2Normalization"), eps_(eps) {
  check(eps >= 0, "L2Normalization: eps must be at least 0, got ", eps);
}

OpForward L2Normalization::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  check_input(x, -1);
  check(x.dim() >= 1 && x.size(-1) > 0, describe(), ": needs a last dim of at least 1, got input ", x.shape());
  const int64_t rows = math::rows_of(x), n = x.size(-1);
  const Tensor w = inverse_sqrt_n(x);
  Tensor y = empty_like(x), rstd = empty({rows}, compute_dtype(x.dtype()), x.device());
  launch_floating<WithBFloat16::Yes>("L2Normalization", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::RMSNormForward<T>{x.ptr<T>(), nullptr,    nullptr, w.ptr<T>(),
                                      y.ptr<T>(), rstd.ptr<compute_t<T>>(), rows, n,
                                      compute_t<T>(eps_ / double(n))};
  });
  if (ctx.requires_backward()) ctx.save<L2NormalizationSaved>() = {x, rstd};
  return {y, {}};
}

OpBackward L2Normalization::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const L2NormalizationSaved& saved = ctx.saved<L2NormalizationSaved>(describe());
  const Tensor w = inverse_sqrt_n(saved.input);
  Tensor dx = empty_like(saved.input);
  launch_floating<WithBFloat16::Yes>("L2Normalization backward", dy, [&](auto zero) {
    using T = decltype(zero);
    return kernels::RMSNormBackward<T>{saved.input.ptr<T>(), w.ptr<T>(), saved.rstd.ptr<compute_t<T>>(),
                                       dy.ptr<T>(),          nullptr,    dx.ptr<T>(),
                                       nullptr,              math::rows_of(saved.input), saved.input.size(-1)};
  });
  return {dx, {}, {}};
}

}  // namespace fuselab
