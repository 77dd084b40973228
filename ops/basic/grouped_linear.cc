#include "ops/basic/grouped_linear.h"

#include <cmath>
#include <numeric>

#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {
namespace {

// W_g, [out, in], a view of the stacked weight; b_g, [1, out], of the stacked bias.
Tensor group_weight(const Tensor& weight, int64_t g) {
  return weight.slice(g, g + 1).view({weight.size(1), weight.size(2)});
}
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
  for (size_t g = 0; g < counts.size(); ++g) {
    check(counts[g] >= 0, describe(), ": group ", g, " has size ", counts[g], ", below 0");
  }
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t(0));
  check(total == rows, describe(), ": the groups' sizes sum to ", total, ", but the input has ", rows,
        " rows (input of shape [", rows, ", ", in_, "])");
  return counts;
}

OpForward GroupedLinear::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>& extra) {
  check_input(x, in_);
  const Tensor rows = x.view({-1, in_});
  const std::vector<int64_t> sizes = checked_sizes(extra.at(0), rows.size(0));
  Tensor y = empty({rows.size(0), out_}, x.dtype(), x.device());  // the groups cover every row
  for (int64_t g = 0, start = 0; g < groups_; start += sizes[size_t(g)], ++g) {
    if (sizes[size_t(g)] == 0) continue;
    Tensor y_g = y.slice(start, start + sizes[size_t(g)]);
    math::matmul_into(y_g, rows.slice(start, start + sizes[size_t(g)]), false, group_weight(weight(), g), true);
    if (has_bias()) y_g.copy_(math::binary(math::BinaryOp::Add, y_g, group_bias(bias(), g), describe().c_str()));
  }
  if (ctx.requires_backward()) ctx.save<GroupedLinearSaved>() = {rows, weight(), from_vector<int64_t>(sizes, {groups_})};
  Shape out_shape = x.shape();
  out_shape.back() = out_;
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
  for (int64_t g = 0, start = 0; g < groups_; start += sizes[size_t(g)], ++g) {
    const int64_t end = start + sizes[size_t(g)];
    Tensor dw_g = dw.defined() ? group_weight(dw, g) : Tensor();
    if (end == start) {
      if (dw_g.defined()) dw_g.fill_(0);
      continue;
    }
    const Tensor dy_g = dy_rows.slice(start, end);
    if (db.defined()) group_bias(db, g).copy_(math::sum_to(dy_g, math::Broadcast::Row, {out_}).view({1, out_}));
    if (dx.defined()) {
      Tensor dx_g = dx.slice(start, end);
      math::matmul_into(dx_g, dy_g, false, group_weight(saved.weight, g), false);
    }
    if (dw_g.defined()) math::matmul_into(dw_g, dy_g, true, saved.input.slice(start, end), false);
  }
  Shape input_shape = dy.shape();
  input_shape.back() = in_;
  std::vector<Tensor> param_grads{dw};
  if (has_bias()) param_grads.push_back(db);
  return {dx.defined() ? dx.view(input_shape) : dx, {Tensor()}, param_grads};
}

}  // namespace fuselab
