#include "ops/basic/moe_permute.h"

#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {
namespace {

// ids as host integers, checked: int64 of `shape` on `device`, each in [0, limit).
std::vector<int64_t> checked_ids(const std::string& op, const char* what, const char* whats, const Tensor& ids,
                                 const Shape& shape, Device device, int64_t limit) {
  check(ids.defined(), op, ": the ", whats, ", an extra input, are missing");
  check(ids.dtype() == DType::Int64 && ids.shape() == shape && ids.device() == device, op, ": the ", whats,
        " must be int64 ", shape, " on ", device, ", got ", ids.shape(), " ", ids.dtype(), " on ", ids.device());
  std::vector<int64_t> values = ids.to(Device::cpu()).to_vector<int64_t>();
  for (size_t i = 0; i < values.size(); ++i) {
    check(values[i] >= 0 && values[i] < limit, op, ": ", what, " ", values[i], " at ", i, " is outside [0, ", limit,
          ")");
  }
  return values;
}

// x's shape with its last dim set to `last`.
Shape with_last(Shape shape, int64_t last) {
  shape.back() = last;
  return shape;
}

}  // namespace

MoEPermute::MoEPermute(int64_t experts, int64_t top_k) : BasicOp("MoEPermute"), experts_(experts), top_k_(top_k) {
  check(experts_ > 0 && top_k_ >= 1 && top_k_ <= experts_, "MoEPermute: top_k ", top_k_, " must be in [1, ",
        experts_, "], the number of experts");
}

OpForward MoEPermute::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>& extra) {
  check_input(x, -1);
  const int64_t width = x.size(-1), rows = x.numel() / std::max<int64_t>(width, 1), copies = rows * top_k_;
  const std::vector<int64_t> experts = checked_ids(describe(), "expert index", "expert indices", extra.at(0),
                                                   with_last(x.shape(), top_k_), x.device(), experts_);
  std::vector<int64_t> counts(static_cast<size_t>(experts_), 0), starts(static_cast<size_t>(experts_), 0);
  for (const int64_t e : experts) ++counts[size_t(e)];
  for (int64_t e = 1; e < experts_; ++e) starts[size_t(e)] = starts[size_t(e - 1)] + counts[size_t(e - 1)];
  std::vector<int64_t> sources(static_cast<size_t>(copies), 0), slots(static_cast<size_t>(copies), 0);
  for (int64_t c = 0; c < copies; ++c) {  // row-major: each expert's copies stay in row order
    const int64_t slot = starts[size_t(experts[size_t(c)])]++;
    sources[size_t(slot)] = c / top_k_;
    slots[size_t(c)] = slot;
  }
  const Tensor source_ids = from_vector<int64_t>(sources, {copies}, x.device());
  const Tensor out = math::embedding(describe().c_str(), x.view({rows, width}), source_ids);
  if (ctx.requires_backward()) ctx.save<MoEPermuteSaved>() = {source_ids, x.shape()};
  return {out, {from_vector<int64_t>(counts, {experts_}, x.device()),
                from_vector<int64_t>(slots, {copies}, x.device()).view(with_last(x.shape(), top_k_))}};
}

OpBackward MoEPermute::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const MoEPermuteSaved& saved = ctx.saved<MoEPermuteSaved>(describe());
  const int64_t width = saved.input_shape.back();
  const Shape rows{saved.sources.numel() / top_k_, width};
  return {math::embedding_backward(dy, saved.sources, rows).view(saved.input_shape), {Tensor()}, {}};
}

MoEUnpermute::MoEUnpermute(int64_t top_k) : BasicOp("MoEUnpermute"), top_k_(top_k) {
  check(top_k_ >= 1, "MoEUnpermute: top_k ", top_k_, " must be at least 1");
}

OpForward MoEUnpermute::op_forward(OpContext& ctx, const Tensor& y, const std::vector<Tensor>& extra) {
  check_input(y, -1);
  const Tensor& weights = extra.at(0);
  check(weights.defined(), describe(), ": the routing weights, its first extra input, are missing");
  check(y.dim() == 2 && weights.dtype() == y.dtype() && weights.device() == y.device() && weights.dim() >= 1 &&
            weights.size(-1) == top_k_ && weights.numel() == y.size(0),
        describe(), ": the expert outputs [rows k, width] ", y.shape(), " need routing weights [..., ", top_k_,
        "] of ", y.size(0) / top_k_, " rows, ", y.dtype(), " on ", y.device(), ", got ", weights.shape(), " ",
        weights.dtype(), " on ", weights.device());
  const int64_t rows = weights.numel() / top_k_, width = y.size(1);
  const std::vector<int64_t> slots =
      checked_ids(describe(), "slot", "slots", extra.at(1), weights.shape(), y.device(), y.size(0));
  std::vector<bool> taken(slots.size(), false);
  for (const int64_t slot : slots) {
    check(!taken[size_t(slot)], describe(), ": slot ", slot, " is given twice; the slots must be MoEPermute's");
    taken[size_t(slot)] = true;
  }
  const Tensor slot_ids = extra.at(1).view({rows * top_k_});
  const Tensor gathered = math::embedding(describe().c_str(), y, slot_ids).view({rows, top_k_, width});
  const Tensor out = math::matmul(weights.view({rows, 1, top_k_}), false, gathered, false);
  if (ctx.requires_backward()) ctx.save<MoEUnpermuteSaved>() = {y, weights, slot_ids};
  return {out.view(with_last(weights.shape(), width)), {}};
}

OpBackward MoEUnpermute::op_backward(OpContext& ctx, const Tensor& dout, const std::vector<Tensor>&) {
  const MoEUnpermuteSaved& saved = ctx.saved<MoEUnpermuteSaved>(describe());
  const int64_t width = saved.expert_outputs.size(1), rows = saved.weights.numel() / top_k_;
  const Tensor d = dout.view({rows, 1, width});
  const Tensor dgathered = math::matmul(saved.weights.view({rows, top_k_, 1}), false, d, false);  // [rows, k, width]
  const Tensor dy = math::embedding_backward(dgathered.view({rows * top_k_, width}), saved.slots,
                                             saved.expert_outputs.shape());
  const Tensor gathered =
      math::embedding(describe().c_str(), saved.expert_outputs, saved.slots).view({rows, top_k_, width});
  const Tensor dweights = math::matmul(gathered, false, d, true).view(saved.weights.shape());  // [rows, k, 1]
  return {dy, {dweights, Tensor()}, {}};
}

}  // namespace fuselab
