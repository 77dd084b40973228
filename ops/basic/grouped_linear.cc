#include "ops/basic/grouped_linear.h"

#include <cmath>

#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {
namespace {

// b_g, [1, out], a view of the stacked bias.
Tensor group_bias(const Tensor& bias, int64_t g) { return bias.slice(g, g + 1); }

}  // namespace

GroupedLinear::GroupedLinear(int64_t groups, int64_t in_features, int64_t out_features, Generator* gen, bool bias)
    : BasicOp("GroupedLinear"), groups_(groups), in_(in_features), out_(out_features) {
  check(groups_ > 0 && in_ > 0 && out_ > 0, "GroupedLinear: sizes must be positive, got ", groups_, " groups, in ",
        in_, ", out ", out_);
  const double bound = 1.0 / std::sqrt(double(in_));
  add_parameter("weight", uniform({groups_, out_, in_}, -bound, bound, DType::Float32, gen));
  if (bias) add_parameter("bias", uniform({groups_, out_}, -bound, bound, DType::Float32, gen));
}

std::vector<int64_t> GroupedLinear::checked_sizes(const Tensor& sizes, int64_t rows) const {
  check(sizes.defined(), describe(), ": the groups' sizes, its extra input, are missing");
  check(sizes.dtype() == DType::Int64 && sizes.shape() == Shape{groups_}, describe(), ": the groups' sizes must be int64 [",
        groups_, "], got ", sizes.dtype(), " ", sizes.shape());
  const std::vector<int64_t> counts = sizes.to(Device::cpu()).to_vector<int64_t>();
  int64_t total = 0;  // each size checked before it is added, so the sum cannot overflow
  for (size_t g = 0; g < counts.size(); ++g) {
    check(counts[g] >= 0 && counts[g] <= rows, describe(), ": group ", g, " has size ", counts[g], ", not in [0, ",
          rows, "] (input of shape [", rows, ", ", in_, "])");
    total += counts[g];
  }
  check(total == rows, describe(), ": the groups' sizes sum to ", total, ", but the input has ", rows,
        " rows (input of shape [", rows, ", ", in_, "])");
  return counts;
}

OpForward GroupedLinear::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>& extra) {
  check_input(x, in_);
  const Tensor rows = x.view({-1, in_});
  const std::vector<int64_t> sizes = checked_sizes(extra.at(0), rows.size(0));
  Tensor y = empty({rows.size(0), out_}, x.dtype(), x.device());  // the groups cover every row
  math::grouped_matmul_into(y, rows, weight(), /*weight_grad=*/false, /*transpose_w=*/true, sizes);
  for (int64_t g = 0, start = 0; has_bias() && g < groups_; start += sizes[size_t(g)], ++g) {
    if (sizes[size_t(g)] == 0) continue;
    Tensor y_g = y.slice(start, start + sizes[size_t(g)]);
    y_g.copy_(math::binary(math::BinaryOp::Add, y_g, group_bias(bias(), g), describe().c_str()));
  }
  if (ctx.requires_backward()) ctx.save<GroupedLinearSaved>() = {rows, weight(), from_vector<int64_t>(sizes, {groups_})};
  const Shape out_shape = with_last(x.shape(), out_);
  return {y.view(out_shape), {}};
}

OpBackward GroupedLinear::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const GroupedLinearSaved& saved = ctx.saved<GroupedLinearSaved>(describe());
  const Tensor dy_rows = dy.view({-1, out_});
  const std::vector<int64_t> sizes = saved.sizes.to_vector<int64_t>();
  // Every row of dx belongs to a group; a group without rows gets dW_g = 0.
  Tensor dx = ctx.input_requires_grad ? empty(saved.input.shape(), dy.dtype(), dy.device()) : Tensor();
  Tensor dw = ctx.params_require_grad.at(0) ? empty(saved.weight.shape(), dy.dtype(), dy.device()) : Tensor();
  Tensor db = has_bias() && ctx.params_require_grad.at(1) ? zeros({groups_, out_}, dy.dtype(), dy.device()) : Tensor();
  if (dx.defined()) {
    math::grouped_matmul_into(dx, dy_rows, saved.weight, /*weight_grad=*/false, /*transpose_w=*/false, sizes);
  }
  if (dw.defined()) math::grouped_matmul_into(dw, dy_rows, saved.input, /*weight_grad=*/true, false, sizes);
  for (int64_t g = 0, start = 0; db.defined() && g < groups_; start += sizes[size_t(g)], ++g) {
    const int64_t end = start + sizes[size_t(g)];
    if (end == start) continue;
    group_bias(db, g).copy_(math::sum_to(dy_rows.slice(start, end), math::Broadcast::Row, {out_}).view({1, out_}));
  }
  const Shape input_shape = with_last(dy.shape(), in_);
  std::vector<Tensor> param_grads{dw};
  if (has_bias()) param_grads.push_back(db);
  return {dx.defined() ? dx.view(input_shape) : dx, {Tensor()}, param_grads};
}

}  // namespace fuselab
