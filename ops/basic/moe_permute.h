// The token shuffles around a mixture of experts' GroupedLinears, a pair of ops joined by
// channels. With k experts chosen for each of x's rows (Router's indices [..., k]):
//
// MoEPermute(experts, top_k, capacity_factor): x [..., width] and the indices as its extra input
// give the k copies of each row in expert order, [kept, width] (the copies of expert 0's rows
// first, each expert's in row order), and two extra outputs: each expert's row count, int64
// [experts] (GroupedLinear's sizes), and the slot of each copy, int64 [..., k] (MoEUnpermute's).
// dx sums each row's kept copies' grads (kernels/moe_combine.h's gather, weights 1).
//
// Dropless by default (capacity_factor 0: kept = rows k). With a capacity factor f > 0 each
// expert takes at most max(1, ceil(f rows k / experts)) copies, the first in row order (then by
// j); the copies past it are dropped: not gathered, slot -1, so their row gets nothing from that
// expert (Switch Transformer's capacity). The dropped copies are rows k - sum(counts).
//
// MoEUnpermute(top_k): the experts' outputs y [kept, width] in that order, with the routing
// weights [..., k] and the slots [..., k] as its extra inputs, give each row's weighted sum of its
// kept copies' outputs, [..., width]:
//   out[r] = sum_j w[r, j] y[slot[r, j]],  dy[slot[r, j]] = w[r, j] dout[r],  dw[r, j] = <dout[r], y[slot[r, j]]>
// (a dropped copy, slot -1, adds nothing and gets dw = 0).
//
// The order is found on the CPU (the indices go there); MoEPermute's gather is the embedding
// kernel, the sums of both ops' backwards and MoEUnpermute's weighted sum kernels/moe_combine.h,
// on x's device.
#pragma once

#include <vector>

#include "ops/basic_op.h"

namespace fuselab {

// Where MoEPermute sends each of x's copies (copy c is of row c / k): its forward without the
// gather, which the fused op that reads the rows itself (ops/fused/grouped_mlp.h) shares.
struct MoEOrder {
  std::vector<int64_t> counts;  // each expert's kept copies, on the host
  std::vector<int64_t> copies;  // [kept], on the host: the copy each row in expert order is
  Tensor sizes;                 // the counts, int64 [experts] on x's device
  Tensor slots;                 // int64 [..., k] on x's device: each copy's row in expert order, -1 where dropped
};

struct MoEPermuteSaved {
  Tensor slots;  // int64 [rows k] on x's device, -1 where dropped
  Shape input_shape;
  NamedTensors tensors() const { return {{"slots", slots}}; }
};

class MoEPermute : public BasicOp {
 public:
  static constexpr int64_t kMaxExperts = int64_t(1) << 24;  // the experts' row counts are a host array
  bool has_cuda_kernels() const override { return true; }  // tensor_math and the CPU
  MoEPermute(int64_t experts, int64_t top_k, double capacity_factor = 0);
  int num_extra_inputs() const override { return 1; }   // the expert indices
  int num_extra_outputs() const override { return 2; }  // the experts' row counts, the slots
  bool extra_output_differentiable(int) const override { return false; }  // integers
  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>& extra) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;
  // The order of x's copies for the expert indices, checked (x [..., width], indices [..., k]).
  MoEOrder order(const Tensor& x, const Tensor& indices) const;
  int64_t experts() const { return experts_; }
  int64_t top_k() const { return top_k_; }

 private:
  // The most copies an expert takes out of `copies` (all of them when dropless).
  int64_t capacity(int64_t copies) const;
  int64_t experts_, top_k_;
  double capacity_factor_;
};

struct MoEUnpermuteSaved {
  Tensor expert_outputs;  // y [kept, width]
  Tensor weights;         // [rows, k]
  Tensor slots;           // int64 [rows k], -1 where dropped
  NamedTensors tensors() const { return {{"expert_outputs", expert_outputs}, {"weights", weights}, {"slots", slots}}; }
};

class MoEUnpermute : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }  // tensor_math and the CPU
  explicit MoEUnpermute(int64_t top_k);
  int num_extra_inputs() const override { return 2; }  // the routing weights, the slots
  OpForward op_forward(OpContext& ctx, const Tensor& y, const std::vector<Tensor>& extra) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dout, const std::vector<Tensor>&) override;
  int64_t top_k() const { return top_k_; }
  // The forward's output without saving anything, for slots known to be MoEPermute's (a fused op
  // that made them passes them unread; op_forward checks a caller's first). The weights are checked.
  Tensor combine(const Tensor& y, const Tensor& weights, const Tensor& slots) const;

 private:
  // The weights' dtype, device and shape against y and the slots (metadata only).
  void check_weights(const Tensor& y, const Tensor& weights, const Tensor& slots) const;
  // The slots' values, read on the host: int64 of the weights' shape, the kept ones (not -1) each
  // naming a different row of y, all of them.
  void check_slots(const Tensor& y, const Tensor& weights, const Tensor& slots) const;
  // out[r] = sum_j w[r, j] y[slot[r, j]], the kernel alone.
  Tensor weighted_sum(const Tensor& y, const Tensor& weights, const Tensor& slots) const;
  int64_t top_k_;
};

}  // namespace fuselab
