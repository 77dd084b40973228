#include "ops/basic/norm_op.h"

#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {

NormOp::NormOp(std::string type, int64_t features, double eps, bool zero_centered_gamma)
    : BasicOp(std::move(type)), features_(features), eps_(eps), zero_centered_gamma_(zero_centered_gamma) {
  check(features > 0 && eps >= 0, this->type(), ": needs features > 0 and eps >= 0, got ", features, ", ", eps);
  add_parameter("weight", zero_centered_gamma ? zeros({features}) : ones({features}));
}

Tensor NormOp::gamma() {
  if (!zero_centered_gamma_) return weight();
  return math::binary(kernels::BinaryOp::Add, weight(), full({features_}, 1.0, weight().dtype(), weight().device()));
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
