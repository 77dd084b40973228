#include "ops/basic/bias.h"

#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {

Bias::Bias(int64_t features, double init_bound, Generator* gen) : BasicOp("Bias"), features_(features) {
  check(features > 0, "Bias: size must be positive, got ", features);
  add_parameter("bias", init_bound > 0 ? uniform({features}, -init_bound, init_bound, DType::Float32, gen)
                                       : zeros({features}));
}

OpForward Bias::op_forward(OpContext&, const Tensor& x, const std::vector<Tensor>&) {
  check_input(x, features_);
  return {math::binary(math::BinaryOp::Add, x, bias()), {}};
}

Tensor Bias::bias_grad(const Tensor& dy) { return math::sum_to(dy, math::Broadcast::Row, {dy.size(-1)}); }

OpBackward Bias::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  return {dy, {}, {ctx.params_require_grad.at(0) ? bias_grad(dy) : Tensor()}};
}

}  // namespace fuselab
