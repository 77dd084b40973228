// CrossEntropy: the mean softmax cross-entropy of logits [..., V] against integer labels, the
// op's one extra input, of the logits' leading dims: the loss at the end of a Sequential.
//   loss = (1 / counted) sum_r (lse(x_r) - x_r[label_r])   over the rows whose label is not ignore_index
//   dx_r = (softmax(x_r) - onehot(label_r)) dloss / counted,  0 on ignored rows;  labels get no grad
// The output is a scalar. The math and its kernels are the cross_entropy function's
// (tensor/cross_entropy_rows.h): over no counted row the loss is NaN, as there, and every grad 0.
#pragma once

#include <cstdint>

#include "ops/basic_op.h"

namespace fuselab {

struct CrossEntropySaved {
  Tensor logits;   // [rows, V]
  Tensor labels;   // [rows]
  Tensor lse;      // [rows]
  Tensor counted;  // the number of counted rows, a scalar on the logits' device
  Shape input_shape;
  NamedTensors tensors() const { return {{"logits", logits}, {"labels", labels}, {"lse", lse}}; }
};

class CrossEntropy : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  explicit CrossEntropy(int64_t ignore_index = -100) : BasicOp("CrossEntropy"), ignore_index_(ignore_index) {}
  int num_extra_inputs() const override { return 1; }  // the labels
  int64_t ignore_index() const { return ignore_index_; }

  // Labels as [rows], checked against logits of `logits_shape` [..., V], dtype and device: int64,
  // of the logits' leading dims, each ignore_index or in [0, V) (else an error naming the op, the
  // shapes, the label and its row). The fused LM head, which never makes the logits, checks through it.
  Tensor checked_labels(const Tensor& labels, const Shape& logits_shape, DType dtype, Device device) const;

  OpForward op_forward(OpContext& ctx, const Tensor& logits, const std::vector<Tensor>& extra) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dloss, const std::vector<Tensor>&) override;

 private:
  int64_t ignore_index_;
};

}  // namespace fuselab
