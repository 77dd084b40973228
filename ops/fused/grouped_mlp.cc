#include "ops/fused/grouped_mlp.h"

#include "kernels/grouped_mlp.h"
#include "ops/basic/gated_linear_unit.h"
#include "ops/basic/grouped_linear.h"
#include "ops/basic/moe_mlp.h"
#include "ops/basic/moe_permute.h"
#include "ops/fusion_pattern.h"
#include "tensor/factories.h"
#include "tensor/launch.h"

namespace fuselab {

GroupedMlp::GroupedMlp(const OpList& ops, std::string type, bool recompute_activation)
    : FusedOp(std::move(type), ops, Pass::ForwardBackward),
      up_(ops.size() == 5 ? 1 : 0),
      recompute_activation_(recompute_activation),
      scaled_(dynamic_cast<const ScaledGatedLinearUnit*>(basic_ops().at(up_ + 1).get())) {}

int64_t GroupedMlp::top_k() const { return routed() ? op<MoEPermute>(0).top_k() : 1; }

kernels::Activation GroupedMlp::gate() const {
  return scaled() ? scaled()->gate() : op<GatedLinearUnit>(up_ + 1).gate();
}

FusedForward GroupedMlp::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                                       const TensorLists& extra_inputs) {
  GroupedLinear &up = op<GroupedLinear>(up_), &down = op<GroupedLinear>(up_ + 2);
  const bool keep = any_requires_backward(ctxs);
  TensorLists extra_outputs(basic_ops().size());
  up.check_input(x, up.in_features());
  Tensor copies;
  std::vector<int64_t> sizes;
  if (routed()) {
    const MoEOrder order = op<MoEPermute>(0).order(x, extra_inputs[0].at(0));
    copies = from_vector<int64_t>(order.copies, {int64_t(order.copies.size())}, x.device());
    sizes = order.counts;
    extra_outputs[0] = {order.sizes, order.slots};
    if (keep) ctxs[0]->save<MoEPermuteSaved>() = {order.slots.view({-1}), x.shape()};
  } else {
    // The pattern has both GroupedLinears read their sizes from one channel.
    sizes = up.checked_sizes(extra_inputs[0].at(0), x.numel() / up.in_features());
  }
  const Tensor rows = x.view({-1, up.in_features()});
  const int64_t kept = copies.defined() ? copies.numel() : rows.size(0), hidden = down.in_features();
  Tensor weights;  // routed the routing weights, scaled the scale of each row
  if (routed()) {
    weights = extra_inputs[4].at(0);
  } else if (scaled()) {
    weights = extra_inputs[1].at(0);
    scaled()->check_scale(with_last(x.shape(), 2 * hidden), x.dtype(), x.device(), weights);
    weights = weights.view({-1});
  }
  Tensor pre = keep ? empty({kept, 2 * hidden}, x.dtype(), x.device()) : Tensor();
  Tensor act = keep && !recompute_activation_ ? empty({kept, hidden}, x.dtype(), x.device()) : Tensor();
  Tensor y = empty({kept, down.out_features()}, x.dtype(), x.device());
  launch_floating<WithBFloat16::Yes>(describe().c_str(), x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::GroupedMlpForward<T>{gate(),
                                         up.groups(),
                                         sizes.data(),
                                         up.in_features(),
                                         hidden,
                                         down.out_features(),
                                         rows.ptr<T>(),
                                         ptr_or_null<int64_t>(copies),
                                         top_k(),
                                         up.weight().ptr<T>(),
                                         down.weight().ptr<T>(),
                                         scaled() ? weights.ptr<T>() : nullptr,
                                         ptr_or_null<T>(pre),
                                         ptr_or_null<T>(act),
                                         y.ptr<T>()};
  });
  const Tensor out = routed() ? op<MoEUnpermute>(4).combine(y, weights, extra_outputs[0][1])
                              : y.view(with_last(x.shape(), down.out_features()));
  if (keep) ctxs[up_]->save<GroupedMlpSaved>() = {rows, copies, weights, pre, act, up.weight(), down.weight(), sizes};
  return {out, extra_outputs};
}

FusedBackward GroupedMlp::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                                         const TensorLists&) {
  const GroupedMlpSaved& s = ctxs[up_]->saved<GroupedMlpSaved>(describe());
  const GroupedLinear &up = op<GroupedLinear>(up_), &down = op<GroupedLinear>(up_ + 2);
  const int64_t hidden = down.in_features(), kept = s.pre.size(0);
  const Tensor dy_rows = dy.view({-1, down.out_features()});  // routed, the tokens'
  Tensor d_rows = ctxs[0]->input_requires_grad ? empty({kept, up.in_features()}, dy.dtype(), dy.device())
                                               : Tensor();  // the experts' rows' grads
  Tensor dw1 = ctxs[up_]->params_require_grad.at(0) ? empty_like(s.up_weight) : Tensor();
  Tensor dw2 = ctxs[up_ + 2]->params_require_grad.at(0) ? empty_like(s.down_weight) : Tensor();
  // A dropped copy's weight gets no grad from the kernel, which writes the kept copies'.
  const size_t weighing = routed() ? 4 : up_ + 1;  // the op whose extra input the weights are
  Tensor dweights = s.weights.defined() && ctxs[weighing]->extra_inputs_require_grad ? zeros_like(s.weights) : Tensor();
  launch_floating<WithBFloat16::Yes>((describe() + " backward").c_str(), dy, [&](auto zero) {
    using T = decltype(zero);
    return kernels::GroupedMlpBackward<T>{gate(),
                                          up.groups(),
                                          s.sizes.data(),
                                          up.in_features(),
                                          hidden,
                                          down.out_features(),
                                          s.input.ptr<T>(),
                                          ptr_or_null<int64_t>(s.copies),
                                          top_k(),
                                          s.up_weight.ptr<T>(),
                                          s.down_weight.ptr<T>(),
                                          s.pre.ptr<T>(),
                                          ptr_or_null<T>(s.act),
                                          dy_rows.ptr<T>(),
                                          ptr_or_null<T>(s.weights),
                                          ptr_or_null<T>(d_rows),
                                          ptr_or_null<T>(dw1),
                                          ptr_or_null<T>(dw2),
                                          ptr_or_null<T>(dweights)};
  });
  if (!routed()) {
    Shape leading = dy.shape();
    leading.pop_back();
    const Tensor dscale = dweights.defined() ? dweights.view(leading) : Tensor();
    return {d_rows.defined() ? d_rows.view(with_last(dy.shape(), up.in_features())) : d_rows,
            {{Tensor()}, scaled() ? std::vector<Tensor>{dscale} : std::vector<Tensor>{}, {Tensor()}},
            {{dw1}, {}, {dw2}}};
  }
  // Each row of x sums its copies' grads: MoEPermute's backward.
  const Tensor dx = d_rows.defined() ? op<MoEPermute>(0).op_backward(*ctxs[0], d_rows, {}).grad_input : Tensor();
  return {dx, {{Tensor()}, {Tensor()}, {}, {Tensor()}, {dweights, Tensor()}}, {{}, {dw1}, {}, {dw2}, {}}};
}

namespace {

// The fused chain multiplies and adds nothing else: no bias term. `up` is the first
// GroupedLinear's slot in the pattern, the GLU and the second GroupedLinear after it.
PatternPredicate no_biases(size_t up) {
  return {"the experts have no biases", [up](const PatternMatch& m, const FusionFacts&) {
            for (size_t slot : {up, up + 2}) {
              const GroupedLinear& linear = m.get<GroupedLinear>(slot);
              if (linear.has_bias()) return linear.describe() + " has a bias";
            }
            return std::string();
          }};
}

// One expert's chain reads one run of rows: both GroupedLinears must take the same sizes, which a
// pattern can only know when they come from one channel (MoEPermute's).
PatternPredicate one_set_of_sizes(size_t up) {
  return {"both read the experts' sizes from one channel", [up](const PatternMatch& m, const FusionFacts&) {
            const GroupedLinear &first = m.get<GroupedLinear>(up), &second = m.get<GroupedLinear>(up + 2);
            const std::string &a = first.extra_input_channel(0), &b = second.extra_input_channel(0);
            return !a.empty() && a == b ? std::string()
                                        : first.describe() + " reads sizes from '" + a + "', " + second.describe() +
                                              " from '" + b + "'";
          }};
}

// The first GroupedLinear's outputs are the GLU's two halves and the second's inputs its output,
// expert for expert.
PatternPredicate halves_feed_the_second(size_t up) {
  return {"the GLU's halves join the two GroupedLinears", [up](const PatternMatch& m, const FusionFacts&) {
            const GroupedLinear &first = m.get<GroupedLinear>(up), &second = m.get<GroupedLinear>(up + 2);
            return first.groups() == second.groups() && first.out_features() == 2 * second.in_features()
                       ? std::string()
                       : first.describe() + " has " + std::to_string(first.groups()) + " groups of " +
                             std::to_string(first.out_features()) + " outputs, " + second.describe() + " " +
                             std::to_string(second.groups()) + " of " + std::to_string(second.in_features()) +
                             " inputs";
          }};
}

// The fused op orders the rows itself and hands the order to the experts and to the combine: they
// must read it from the permute, an expert per group, and the combine take as many copies a row.
PatternPredicate one_routing() {
  return {"the experts and the unpermute read the permute's order", [](const PatternMatch& m, const FusionFacts&) {
            const MoEPermute& permute = m.get<MoEPermute>(0);
            const GroupedLinear& up = m.get<GroupedLinear>(1);
            const MoEUnpermute& unpermute = m.get<MoEUnpermute>(4);
            const std::string &sizes = permute.extra_output_channel(0), &slots = permute.extra_output_channel(1);
            if (sizes.empty() || up.extra_input_channel(0) != sizes) {
              return up.describe() + " does not read the sizes " + permute.describe() + " writes";
            }
            if (slots.empty() || unpermute.extra_input_channel(1) != slots) {
              return unpermute.describe() + " does not read the slots " + permute.describe() + " writes";
            }
            if (permute.experts() != up.groups() || permute.top_k() != unpermute.top_k()) {
              return permute.describe() + " routes to " + std::to_string(permute.experts()) + " experts, top " +
                     std::to_string(permute.top_k()) + "; " + up.describe() + " has " + std::to_string(up.groups()) +
                     " groups, " + unpermute.describe() + " top " + std::to_string(unpermute.top_k());
            }
            return std::string();
          }};
}

// The indices and the routing weights from the caller: rows routed to 2-4 experts (top 1 or 2, at
// random, so some experts may get no rows).
FusionExample experts_example(int64_t rows, int64_t width, DType dtype, Generator& gen) {
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
}

// The same layer with the scaled GLU, each expert row's scale from the caller (in expert order): a
// layout to test the fusion on, weighted twice (a model applies the routing weights in the GLU's
// scale or in the unpermute, not both, as TransformerEngine's MoE passes them to the GLU).
FusionExample scaled_experts_example(int64_t rows, int64_t width, DType dtype, Generator& gen) {
  FusionExample e = experts_example(rows, width, dtype, gen);
  e.ops[2] = std::make_shared<ScaledGatedLinearUnit>(dynamic_cast<const GatedLinearUnit&>(*e.ops[2]).gate());
  const int64_t copies = e.extra_inputs[0].numel();  // dropless: every copy is an expert row
  e.extra_inputs.insert(e.extra_inputs.begin() + 1, uniform({copies}, 0, 1, dtype, &gen));
  return e;
}

// The fusion of GroupedLinear, a GLU of type Glu and GroupedLinear into GroupedMlp.
template <class Glu>
FusionDefinition experts_mlp_fusion(const std::string& name, bool recompute_activation,
                                    FusionExampleMaker example) {
  FusionPattern pattern{{slot<GroupedLinear>(), slot<Glu>(), slot<GroupedLinear>()},
                        {no_biases(0), one_set_of_sizes(0), halves_feed_the_second(0)},
                        [name, recompute_activation](const OpList& ops) {
                          return std::make_shared<GroupedMlp>(ops, name, recompute_activation);
                        }};
  return {name, Pass::ForwardBackward, fuse_pattern(std::move(pattern)), std::move(example)};
}

std::string fusion_name(const std::string& base, bool recompute_activation) {
  return recompute_activation ? base : base + "KeepingActivation";
}

}  // namespace

// The example: a layer of experts, its permute to its unpermute (ops/basic/moe_mlp.h's moe_experts).
FusionDefinition routed_grouped_mlp_fusion(bool recompute_activation) {
  const std::string name = fusion_name("RoutedGroupedMlp", recompute_activation);
  FusionPattern pattern{{slot<MoEPermute>(), slot<GroupedLinear>(), slot<GatedLinearUnit>(), slot<GroupedLinear>(),
                         slot<MoEUnpermute>()},
                        {no_biases(1), one_set_of_sizes(1), halves_feed_the_second(1), one_routing()},
                        [name, recompute_activation](const OpList& ops) {
                          return std::make_shared<GroupedMlp>(ops, name, recompute_activation);
                        }};
  return {name, Pass::ForwardBackward, fuse_pattern(std::move(pattern)), experts_example};
}

// The example: the same layer of experts, which this fusion takes from its GroupedLinear to its
// GroupedLinear.
FusionDefinition grouped_mlp_fusion(bool recompute_activation) {
  return experts_mlp_fusion<GatedLinearUnit>(fusion_name("GroupedMlp", recompute_activation), recompute_activation,
                                             experts_example);
}

// The example: that layer with the scaled GLU.
FusionDefinition scaled_grouped_mlp_fusion(bool recompute_activation) {
  return experts_mlp_fusion<ScaledGatedLinearUnit>(fusion_name("ScaledGroupedMlp", recompute_activation),
                                                   recompute_activation, scaled_experts_example);
}

}  // namespace fuselab
