// Softmax cross-entropy row by row, untracked: the kernels of kernels/softmax.h (where the math is)
// with the checks and the mean around them. The cross_entropy function, the CrossEntropy op and the
// LMHeadCrossEntropy fusion all compute the loss through these, so it is written once; a chunked
// caller (the fused LM head) fills slices of its rows one chunk at a time.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/tensor.h"

namespace fuselab::math {

// Throws naming `op` unless logits of `logits_shape`, `dtype` and `device` are float32 or float64
// [rows, V] and labels int64 [rows] on that device; on the CPU also unless every label is
// ignore_index or in [0, V), naming the label, its row and V. (On CUDA the kernel records a label
// out of range instead, without a wait: kernels/index_fault.h.) The fused LM head, which never
// makes the logits, checks with their shape.
void check_cross_entropy_inputs(const std::string& op, const Shape& logits_shape, DType dtype, Device device,
                                const Tensor& labels, int64_t ignore_index);

// The per-row terms: lse [rows], loss [rows, 1] (lse - x[label], 0 when ignored) and counted
// [rows, 1] (1 where the row counts toward the mean, else 0), in the compute dtype of the logits
// (float32 for bfloat16 logits: so are the mean loss and its grad).
struct CrossEntropyRows {
  Tensor lse, loss, counted;
  static CrossEntropyRows empty(int64_t rows, DType logits_dtype, Device device);
  CrossEntropyRows slice(int64_t start, int64_t end) const;  // rows [start, end), views
};

// Fills `into` (of logits' rows) from checked logits [rows, V] and labels [rows]; `op` names the
// caller in the error a label out of range on a GPU gives.
void cross_entropy_rows(const char* op, const Tensor& logits, const Tensor& labels, int64_t ignore_index,
                        const CrossEntropyRows& into);

// cross_entropy_rows, and in the same pass over each row `logits` overwritten with
// softmax(logits) - onehot(label), 0 on ignored rows: the logits' grad before dloss / counted, for
// a caller whose loss ends the graph (kernels/softmax.h, CrossEntropyForwardGrad).
void cross_entropy_rows_and_grad(const char* op, const Tensor& logits, const Tensor& labels, int64_t ignore_index,
                                 const CrossEntropyRows& into);

// The loss, sum loss / sum counted, and the count, both scalars on the device. Over no counted row
// the mean is 0 / 0: NaN, as in PyTorch, so that a batch with nothing to learn from shows up in the
// loss instead of reading as a perfect 0 (the grads are all zero then).
struct CrossEntropyMean {
  Tensor loss, counted;
};
CrossEntropyMean cross_entropy_mean(const CrossEntropyRows& rows);

// dlogits = (softmax(logits) - onehot(label)) * dloss / counted per row, 0 on ignored rows, for
// dloss and counted scalars on the device. dlogits may be logits itself (computed in place).
void cross_entropy_rows_backward(const Tensor& logits, const Tensor& labels, const Tensor& lse, const Tensor& dloss,
                                 const Tensor& counted, int64_t ignore_index, const Tensor& dlogits);

}  // namespace fuselab::math
