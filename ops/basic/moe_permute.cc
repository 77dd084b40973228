#include "ops/basic/moe_permute.h"

#include <cmath>

#include "kernels/moe_combine.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {
namespace {

// ids as host integers, checked: int64 of `shape` on `device`, each in [low, limit).
std::vector<int64_t> checked_ids(const std::string& op, const char* what, const char* whats, const Tensor& ids,
                                 const Shape& shape, Device device, int64_t low, int64_t limit) {
  check(ids.defined(), op, ": the ", whats, ", an extra input, are missing");
  check(ids.dtype() == DType::Int64 && ids.shape() == shape && ids.device() == device, op, ": the ", whats,
        " must be int64 ", shape, " on ", device, ", got ", ids.shape(), " ", ids.dtype(), " on ", ids.device());
  std::vector<int64_t> values = ids.to(Device::cpu()).to_vector<int64_t>();
  for (size_t i = 0; i < values.size(); ++i) {
    check(values[i] >= low && values[i] < limit, op, ": ", what, " ", values[i], " at ", i, " is outside [", low, ", ",
          limit, ")");
  }
  return values;
}

}  // namespace

MoEPermute::MoEPermute(int64_t experts, int64_t top_k, double capacity_factor)
    : BasicOp("MoEPermute"), experts_(experts), top_k_(top_k), capacity_factor_(capacity_factor) {
  check(experts_ >= 1 && experts_ <= kMaxExperts, "MoEPermute: experts ", experts_, " must be in [1, ", kMaxExperts,
        "]");
  check(top_k_ >= 1 && top_k_ <= experts_, "MoEPermute: top_k ", top_k_, " must be in [1, ", experts_,
        "], the number of experts");
  check(std::isfinite(capacity_factor_) && capacity_factor_ >= 0, "MoEPermute: capacity factor ", capacity_factor_,
        " must be 0 (dropless) or positive");
}

int64_t MoEPermute::capacity(int64_t copies) const {
  if (capacity_factor_ == 0) return copies;
  // No expert can take more than every copy, which also keeps a huge factor's capacity in range.
  // At least one copy: a factor so small that the product underflows to 0 still takes one.
  const double capacity = std::max(1.0, std::ceil(capacity_factor_ * double(copies) / double(experts_)));
  return capacity >= double(copies) ? copies : int64_t(capacity);
}

MoEOrder MoEPermute::order(const Tensor& x, const Tensor& indices) const {
  check_input(x, -1);
  check(x.size(-1) > 0, describe(), ": input ", x.shape(), " has rows of width 0");
  const int64_t copies = x.numel() / x.size(-1) * top_k_;
  const Shape slots_shape = with_last(x.shape(), top_k_);
  const std::vector<int64_t> experts =
      checked_ids(describe(), "expert index", "expert indices", indices, slots_shape, x.device(), 0, experts_);
  // Each expert keeps its first `limit` copies in row order; the slots of the rest stay -1.
  const int64_t limit = capacity(copies);
  std::vector<int64_t> counts(static_cast<size_t>(experts_), 0), slots(static_cast<size_t>(copies), -1);
  for (int64_t c = 0; c < copies; ++c) {
    int64_t& count = counts[size_t(experts[size_t(c)])];
    if (count < limit) slots[size_t(c)] = count++;  // the copy's place within its expert, for now
  }
  std::vector<int64_t> starts(static_cast<size_t>(experts_), 0);
  for (int64_t e = 1; e < experts_; ++e) starts[size_t(e)] = starts[size_t(e - 1)] + counts[size_t(e - 1)];
  const int64_t kept = starts.back() + counts.back();
  std::vector<int64_t> kept_copies(static_cast<size_t>(kept), 0);
  for (int64_t c = 0; c < copies; ++c) {
    if (slots[size_t(c)] < 0) continue;
    slots[size_t(c)] += starts[size_t(experts[size_t(c)])];
    kept_copies[size_t(slots[size_t(c)])] = c;
  }
  return {counts, kept_copies, from_vector<int64_t>(counts, {experts_}, x.device()),
          from_vector<int64_t>(slots, slots_shape, x.device())};
}

OpForward MoEPermute::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>& extra) {
  const MoEOrder order = this->order(x, extra.at(0));
  std::vector<int64_t> sources = order.copies;  // the rows of x the copies are
  for (int64_t& row : sources) row /= top_k_;
  const int64_t width = x.size(-1);
  const Tensor out = math::embedding(describe().c_str(), x.view({-1, width}),
                                     from_vector<int64_t>(sources, {int64_t(sources.size())}, x.device()));
  if (ctx.requires_backward()) ctx.save<MoEPermuteSaved>() = {order.slots.view({-1}), x.shape()};
  return {out, {order.sizes, order.slots}};
}

OpBackward MoEPermute::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const MoEPermuteSaved& saved = ctx.saved<MoEPermuteSaved>(describe());
  const int64_t width = saved.input_shape.back(), rows = numel(saved.input_shape) / std::max<int64_t>(width, 1);
  Tensor dx = empty(saved.input_shape, dy.dtype(), dy.device());
  launch_floating<WithBFloat16::Yes>(describe().c_str(), dy, [&](auto zero) {
    using T = decltype(zero);
    return kernels::MoECombineForward<T>{dy.ptr<T>(), nullptr, saved.slots.ptr<int64_t>(), dx.ptr<T>(), rows, top_k_,
                                         width};
  });
  return {dx, {Tensor()}, {}};
}

MoEUnpermute::MoEUnpermute(int64_t top_k) : BasicOp("MoEUnpermute"), top_k_(top_k) {
  check(top_k_ >= 1, "MoEUnpermute: top_k ", top_k_, " must be at least 1");
}

void MoEUnpermute::check_weights(const Tensor& y, const Tensor& weights, const Tensor& slots) const {
  check_input(y, -1);
  check(weights.defined(), describe(), ": the routing weights, its first extra input, are missing");
  check(y.dim() == 2 && weights.dtype() == y.dtype() && weights.device() == y.device() && weights.dim() >= 1 &&
            weights.size(-1) == top_k_ && weights.numel() >= y.size(0),
        describe(), ": the expert outputs [kept copies, width] ", y.shape(), " need routing weights [..., ", top_k_,
        "] of at least ", y.size(0), " copies, ", y.dtype(), " on ", y.device(), ", got ", weights.shape(), " ",
        weights.dtype(), " on ", weights.device());
  if (!slots.defined()) return;  // check_slots names them missing
  check(slots.shape() == weights.shape(), describe(), ": the routing weights ", weights.shape(),
        " must be one per copy, as the slots ", slots.shape(), " are");
}

void MoEUnpermute::check_slots(const Tensor& y, const Tensor& weights, const Tensor& slots) const {
  // The kept copies' slots (the others -1) are a permutation of y's rows, as MoEPermute gives.
  const std::vector<int64_t> slot_values =
      checked_ids(describe(), "slot", "slots", slots, weights.shape(), y.device(), -1, y.size(0));
  std::vector<bool> taken(size_t(y.size(0)), false);
  int64_t kept = 0;
  for (const int64_t slot : slot_values) {
    if (slot < 0) continue;
    check(!taken[size_t(slot)], describe(), ": slot ", slot, " is given twice; the slots must be MoEPermute's");
    taken[size_t(slot)] = true;
    ++kept;
  }
  check(kept == y.size(0), describe(), ": the slots name ", kept, " of the ", y.size(0),
        " expert outputs; the slots must be MoEPermute's");
}

Tensor MoEUnpermute::weighted_sum(const Tensor& y, const Tensor& weights, const Tensor& slots) const {
  const int64_t rows = weights.numel() / top_k_, width = y.size(1);
  const Tensor slot_ids = slots.view({rows * top_k_});
  Tensor out = empty({rows, width}, y.dtype(), y.device());
  launch_floating<WithBFloat16::Yes>(describe().c_str(), y, [&](auto zero) {
    using T = decltype(zero);
    return kernels::MoECombineForward<T>{y.ptr<T>(), weights.ptr<T>(), slot_ids.ptr<int64_t>(),
                                         out.ptr<T>(), rows, top_k_, width};
  });
  return out.view(with_last(weights.shape(), width));
}

Tensor MoEUnpermute::combine(const Tensor& y, const Tensor& weights, const Tensor& slots) const {
  check_weights(y, weights, slots);
  return weighted_sum(y, weights, slots);
}

OpForward MoEUnpermute::op_forward(OpContext& ctx, const Tensor& y, const std::vector<Tensor>& extra) {
  const Tensor &weights = extra.at(0), &slots = extra.at(1);
  check_weights(y, weights, slots);
  check_slots(y, weights, slots);
  const Tensor out = weighted_sum(y, weights, slots);
  if (ctx.requires_backward()) ctx.save<MoEUnpermuteSaved>() = {y, weights, slots.view({-1})};
  return {out, {}};
}

OpBackward MoEUnpermute::op_backward(OpContext& ctx, const Tensor& dout, const std::vector<Tensor>&) {
  const MoEUnpermuteSaved& saved = ctx.saved<MoEUnpermuteSaved>(describe());
  const int64_t width = saved.expert_outputs.size(1), rows = saved.weights.numel() / top_k_;
  Tensor dy = empty(saved.expert_outputs.shape(), dout.dtype(), dout.device());
  Tensor dweights = empty(saved.weights.shape(), dout.dtype(), dout.device());
  launch_floating<WithBFloat16::Yes>(describe().c_str(), dout, [&](auto zero) {
    using T = decltype(zero);
    return kernels::MoECombineBackward<T>{dout.ptr<T>(), saved.expert_outputs.ptr<T>(), saved.weights.ptr<T>(),
                                          saved.slots.ptr<int64_t>(), dy.ptr<T>(), dweights.ptr<T>(), rows, top_k_,
                                          width};
  });
  return {dy, {dweights, Tensor()}, {}};
}

}  // namespace fuselab
