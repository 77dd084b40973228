// The token shuffles around a mixture of experts' GroupedLinears, a pair of ops joined by
// channels. With k experts chosen for each of x's rows (Router's indices [..., k]):
//
// MoEPermute(experts, top_k): x [..., width] and the indices as its extra input give the k copies
// of each row in expert order, [rows k, width] (the copies of expert 0's rows first, each expert's
// in row order), and two extra outputs: each expert's row count, int64 [experts] (GroupedLinear's
// sizes), and the slot of each copy, int64 [..., k] (MoEUnpermute's). dx sums each row's copies'
// grads.
//
// MoEUnpermute(top_k): the experts' outputs y [rows k, width] in that order, with the routing
// weights [..., k] and the slots [..., k] as its extra inputs, give each row's weighted sum of its
// copies' outputs, [..., width]:
//   out[r] = sum_j w[r, j] y[slot[r, j]],  dy[slot[r, j]] = w[r, j] dout[r],  dw[r, j] = <dout[r], y[slot[r, j]]>
//
// Dropless: every copy goes to its expert. The order is found on the CPU (the indices go there);
// the gathers and scatter-adds are the embedding kernels, on x's device.
#pragma once

#include "ops/basic_op.h"

namespace fuselab {

struct MoEPermuteSaved {
  Tensor sources;  // int64 [rows k] on x's device: the row each copy is of
  Shape input_shape;
  NamedTensors tensors() const { return {{"sources", sources}}; }
};

class MoEPermute : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }  // tensor_math and the CPU
  MoEPermute(int64_t experts, int64_t top_k);
  int num_extra_inputs() const override { return 1; }   // the expert indices
  int num_extra_outputs() const override { return 2; }  // the experts' row counts, the slots
  bool extra_output_differentiable(int) const override { return false; }  // integers
  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>& extra) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

 private:
  int64_t experts_, top_k_;
};

struct MoEUnpermuteSaved {
  Tensor expert_outputs;  // y [rows k, width]
  Tensor weights;         // [rows, k]
  Tensor slots;           // int64 [rows k]
  NamedTensors tensors() const { return {{"expert_outputs", expert_outputs}, {"weights", weights}, {"slots", slots}}; }
};

class MoEUnpermute : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }  // tensor_math and the CPU
  explicit MoEUnpermute(int64_t top_k);
  int num_extra_inputs() const override { return 2; }  // the routing weights, the slots
  OpForward op_forward(OpContext& ctx, const Tensor& y, const std::vector<Tensor>& extra) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dout, const std::vector<Tensor>&) override;

 private:
  int64_t top_k_;
};

}  // namespace fuselab
