#include "ops/fused/grouped_mlp.h"

#include "kernels/grouped_mlp.h"
#include "ops/basic/gated_linear_unit.h"
#include "ops/basic/grouped_linear.h"
#include "ops/basic/moe_mlp.h"
#include "ops/fusion_pattern.h"
#include "tensor/factories.h"
#include "tensor/launch.h"

namespace fuselab {
namespace {

// x's shape with its last dim set to `last`.
Shape with_last(Shape shape, int64_t last) {
  shape.back() = last;
  return shape;
}

}  // namespace

GroupedMlp::GroupedMlp(const OpList& ops) : FusedOp("GroupedMlp", ops, Pass::ForwardBackward) {}

FusedForward GroupedMlp::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                                       const TensorLists& extra_inputs) {
  GroupedLinear &up = op<GroupedLinear>(0), &down = op<GroupedLinear>(2);
  const GatedLinearUnit& glu = op<GatedLinearUnit>(1);
  up.check_input(x, up.in_features());
  const Tensor rows = x.view({-1, up.in_features()});
  // The pattern has both GroupedLinears read their sizes from one channel.
  const std::vector<int64_t> sizes = up.checked_sizes(extra_inputs[0].at(0), rows.size(0));
  const int64_t hidden = down.in_features();
  const bool keep = any_requires_backward(ctxs);
  Tensor pre = keep ? empty({rows.size(0), 2 * hidden}, x.dtype(), x.device()) : Tensor();
  Tensor y = empty({rows.size(0), down.out_features()}, x.dtype(), x.device());
  launch_floating<WithBFloat16::No>("GroupedMlp", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::GroupedMlpForward<T>{glu.gate(),         up.groups(),       sizes.data(),
                                         up.in_features(),   hidden,            down.out_features(),
                                         rows.ptr<T>(),      up.weight().ptr<T>(), down.weight().ptr<T>(),
                                         ptr_or_null<T>(pre), y.ptr<T>()};
  });
  if (keep) ctxs[0]->save<GroupedMlpSaved>() = {rows, pre, up.weight(), down.weight(), sizes};
  return {y.view(with_last(x.shape(), down.out_features())), TensorLists(basic_ops().size())};
}

FusedBackward GroupedMlp::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                                         const TensorLists&) {
  const GroupedMlpSaved& s = ctxs[0]->saved<GroupedMlpSaved>(describe());
  const GroupedLinear &up = op<GroupedLinear>(0), &down = op<GroupedLinear>(2);
  const int64_t hidden = down.in_features();
  const Tensor dy_rows = dy.view({-1, down.out_features()});
  Tensor dx = ctxs[0]->input_requires_grad ? empty(s.input.shape(), dy.dtype(), dy.device()) : Tensor();
  Tensor dw1 = ctxs[0]->params_require_grad.at(0) ? empty_like(s.up_weight) : Tensor();
  Tensor dw2 = ctxs[2]->params_require_grad.at(0) ? empty_like(s.down_weight) : Tensor();
  launch_floating<WithBFloat16::No>("GroupedMlp backward", dy, [&](auto zero) {
    using T = decltype(zero);
    return kernels::GroupedMlpBackward<T>{
        op<GatedLinearUnit>(1).gate(), up.groups(), s.sizes.data(), up.in_features(), hidden, down.out_features(),
        s.input.ptr<T>(), s.up_weight.ptr<T>(), s.down_weight.ptr<T>(), s.pre.ptr<T>(), dy_rows.ptr<T>(),
        ptr_or_null<T>(dx), ptr_or_null<T>(dw1), ptr_or_null<T>(dw2)};
  });
  TensorLists grad_extra_inputs{{Tensor()}, {}, {Tensor()}}, grad_params{{dw1}, {}, {dw2}};
  return {dx.defined() ? dx.view(with_last(dy.shape(), up.in_features())) : dx, grad_extra_inputs, grad_params};
}

namespace {

// The fused chain multiplies and adds nothing else: no bias term.
PatternPredicate no_biases() {
  return {"the experts have no biases", [](const PatternMatch& m, const FusionFacts&) {
            for (size_t slot : {size_t(0), size_t(2)}) {
              const GroupedLinear& linear = m.get<GroupedLinear>(slot);
              if (linear.has_bias()) return linear.describe() + " has a bias";
            }
            return std::string();
          }};
}

// One expert's chain reads one run of rows: both GroupedLinears must take the same sizes, which a
// pattern can only know when they come from one channel (MoEPermute's).
PatternPredicate one_set_of_sizes() {
  return {"both read the experts' sizes from one channel", [](const PatternMatch& m, const FusionFacts&) {
            const GroupedLinear &up = m.get<GroupedLinear>(0), &down = m.get<GroupedLinear>(2);
            const std::string &a = up.extra_input_channel(0), &b = down.extra_input_channel(0);
            return !a.empty() && a == b ? std::string()
                                        : up.describe() + " reads sizes from '" + a + "', " + down.describe() +
                                              " from '" + b + "'";
          }};
}

// The first GroupedLinear's outputs are the GLU's two halves and the second's inputs its output,
// expert for expert.
PatternPredicate halves_feed_the_second() {
  return {"the GLU's halves join the two GroupedLinears", [](const PatternMatch& m, const FusionFacts&) {
            const GroupedLinear &up = m.get<GroupedLinear>(0), &down = m.get<GroupedLinear>(2);
            return up.groups() == down.groups() && up.out_features() == 2 * down.in_features()
                       ? std::string()
                       : up.describe() + " has " + std::to_string(up.groups()) + " groups of " +
                             std::to_string(up.out_features()) + " outputs, " + down.describe() + " " +
                             std::to_string(down.groups()) + " of " + std::to_string(down.in_features()) + " inputs";
          }};
}

// The GLU kernels take float32 and float64.
PatternPredicate not_bfloat16() {
  return {"float32 or float64", [](const PatternMatch&, const FusionFacts& facts) {
            return facts.dtype == DType::BFloat16 ? std::string("the GLU kernels take no bfloat16") : std::string();
          }};
}

}  // namespace

// The example: the experts' MLP between its permute and unpermute, rows routed to 2-4 experts
// (top 1 or 2, at random, so some experts may get no rows), the indices and the routing weights
// from the caller.
FusionDefinition grouped_mlp_fusion() {
  FusionPattern pattern{{slot<GroupedLinear>(), slot<GatedLinearUnit>(), slot<GroupedLinear>()},
                        {no_biases(), one_set_of_sizes(), halves_feed_the_second(), not_bfloat16()},
                        [](const OpList& ops) { return std::make_shared<GroupedMlp>(ops); }};
  return {"GroupedMlp", Pass::ForwardBackward, fuse_pattern(std::move(pattern)),
          [](int64_t rows, int64_t width, DType dtype, Generator& gen) {
            const int64_t experts = 2 + rows % 3, top_k = 1 + rows % 2, hidden = 1 + width % 5;
            std::vector<std::shared_ptr<BasicOp>> ops = moe_experts({width, hidden, experts, top_k}, "moe", gen).ops;
            for (const auto& op : ops) op->to(dtype);
            std::vector<int64_t> chosen(size_t(rows * top_k));
            for (int64_t r = 0; r < rows; ++r) {  // top_k distinct experts per row
              const int64_t first = int64_t(gen.next_u64() % uint64_t(experts));
              for (int64_t j = 0; j < top_k; ++j) chosen[size_t(r * top_k + j)] = (first + j) % experts;
            }
            return FusionExample{ops,
                                 uniform({rows, width}, -1, 1, dtype, &gen),
                                 {from_vector<int64_t>(chosen, {rows, top_k}), uniform({rows, top_k}, 0, 1, dtype, &gen)}};
          }};
}

}  // namespace fuselab
