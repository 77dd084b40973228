#include "ops/basic/norm_op.h"

#include "tensor/factories.h"

namespace fuselab {

NormOp::NormOp(std::string type, int64_t features, double eps)
    : BasicOp(std::move(type)), features_(features), eps_(eps) {
  check(features > 0 && eps >= 0, this->type(), ": needs features > 0 and eps >= 0, got ", features, ", ", eps);
}

Tensor NormOp::sum_buffer(const Tensor& x, const Tensor& residual) const {
  check_input(x, features_);
  if (!residual.defined()) return Tensor();
  check(residual.shape() == x.shape() && residual.dtype() == x.dtype() && residual.device() == x.device(),
        describe(), ": the residual ", residual.shape(), " ", residual.dtype(), " on ", residual.device(),
        " must match the input ", x.shape(), " ", x.dtype(), " on ", x.device());
  return empty_like(x);
}

}  // namespace fuselab
