#include "ops/basic/linear.h"

#include <cmath>

#include "autograd/tape.h"
#include "ops/basic/bias.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {

Linear::Linear(int64_t in_features, int64_t out_features, Generator* gen)
    : BasicOp("Linear"), in_(in_features), out_(out_features) {
  check(in_ > 0 && out_ > 0, "Linear: sizes must be positive, got in ", in_, ", out ", out_);
  const double bound = 1.0 / std::sqrt(double(in_));
  add_parameter("weight", uniform({out_, in_}, -bound, bound, DType::Float32, gen));
}

void Linear::save_for_backward(OpContext& ctx, const Tensor& x, const Tensor& weight) {
  if (!ctx.requires_backward()) return;
  LinearSaved& saved = ctx.save<LinearSaved>();
  saved.input = x;
  saved.weight = weight;
}

OpForward Linear::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  check_input(x, in_);
  const Shape out_shape = with_last(x.shape(), out_);
  const Tensor y = math::matmul(x.view({-1, in_}), false, weight(), true).view(out_shape);
  save_for_backward(ctx, x, weight());
  return {y, {}};
}

Tensor Linear::input_grad(const Tensor& dy, const Tensor& weight, const Shape& input_shape, double alpha) {
  return math::matmul(dy.view({-1, dy.size(-1)}), false, weight, false, Tensor(), alpha).view(input_shape);
}

Tensor Linear::weight_grad(const Tensor& dy, const Tensor& input, Tensor into, double alpha) {
  const Tensor dy_rows = dy.view({-1, dy.size(-1)}), x_rows = input.view({-1, input.size(-1)});
  const Shape shape{dy.size(-1), input.size(-1)};  // a grad of another shape is refused where it is added
  if (!into.defined() || into.shape() != shape || into.dtype() != dy.dtype() || into.device() != dy.device()) {
    return math::matmul(dy_rows, true, x_rows, false, Tensor(), alpha);
  }
  math::matmul_add_into(into, dy_rows, true, x_rows, false, alpha);
  return into;
}

OpBackward Linear::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const LinearSaved& saved = ctx.saved<LinearSaved>(describe());
  const Tensor dx = ctx.input_requires_grad ? input_grad(dy, saved.weight, saved.input.shape()) : Tensor();
  const Tensor dw = ctx.params_require_grad.at(0)
                        ? weight_grad(dy, saved.input, grad_to_accumulate_into(saved.weight))
                        : Tensor();
  return {dx, {}, {dw}};
}

std::vector<std::shared_ptr<BasicOp>> linear_with_bias(int64_t in_features, int64_t out_features, Generator* gen) {
  return {std::make_shared<Linear>(in_features, out_features, gen),
          std::make_shared<Bias>(out_features, 1.0 / std::sqrt(double(in_features)), gen)};
}

}  // namespace fuselab
