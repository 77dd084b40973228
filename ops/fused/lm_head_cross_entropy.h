// LMHeadCrossEntropy: a language model's output Linear (and its Bias, if it has one) and its
// CrossEntropy loss as one joint forward-backward op that never holds the [tokens, vocab] logits.
//
// The forward takes the rows (tokens) a chunk at a time, with chunks sized so that one chunk's
// logits take at most kChunkLogitsBytes: each chunk's logits z = x_c W^T come from one GEMM, then
// the loss terms lse(z_r) - z_r[label_r] (max-subtracted, kernels/softmax.h). When a backward will
// run, the forward goes on with the chunk while its logits are at hand, since the loss is a scalar
// that ends the graph and its grad only scales what follows:
//   g = softmax(z) - onehot(label)   (in place, in the loss terms' pass over each row; 0 on ignored rows)
//   Gx_c = g W,   GW += g^T x_c,   Gb += sum_r g_r
// and the backward is dx = Gx s, dW = GW s with s = dloss / counted. Recomputing the logits in the
// backward instead, as FlashAttention does its scores, would add a fourth GEMM of the same size to
// the three the unfused pair runs (a third more work); holding Gx and GW (the sizes of x and W)
// from forward to backward costs far less than that. At 8192 tokens and a vocabulary of 8192 in
// float32 the unfused pair holds 256 MiB of logits and as much again for their grad; this op, one
// 16 MiB chunk. The loss and grads are the CrossEntropy op's, to the rounding of the sums: NaN
// over no counted row, with all grads 0.
// bfloat16 runs widened to float32, the loss float32 as CrossEntropy's, the grads bfloat16.
#pragma once

#include <cstdint>

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

class Bias;

struct LMHeadCrossEntropySaved {
  Tensor input_grad_sum;   // Gx [rows, in], undefined when the input needs no grad
  Tensor weight_grad_sum;  // GW [vocab, in], undefined when the weight needs no grad
  Tensor bias_grad_sum;    // Gb [vocab], undefined without a Bias or when it needs no grad
  Tensor counted;          // the number of counted rows, a scalar on the device
  Shape input_shape;
  DType dtype;             // of the input and the parameters (the sums are in its compute dtype)
  NamedTensors tensors() const {
    return {{"input_grad_sum", input_grad_sum}, {"weight_grad_sum", weight_grad_sum}, {"bias_grad_sum", bias_grad_sum}};
  }
};

class LMHeadCrossEntropy : public FusedOp {
 public:
  // The most bytes of logits one chunk makes: large enough that each chunk's GEMMs run at full
  // speed (512 rows of a float32 vocabulary of 8192), small enough to stay far below the logits.
  static constexpr int64_t kChunkLogitsBytes = int64_t(16) << 20;
  // Rows per chunk for a vocabulary in `dtype`: at least one.
  static int64_t chunk_rows(int64_t vocab, DType dtype);

  // ops: Linear, optional Bias, CrossEntropy
  explicit LMHeadCrossEntropy(const OpList& ops);
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                             const TensorLists& extra_inputs) override;
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dloss,
                               const TensorLists& grad_extra_outputs) override;

 private:
  Bias* bias() const;         // the Bias, if covered
  size_t loss_index() const;  // where CrossEntropy is among the basic ops
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition lm_head_cross_entropy_fusion();

}  // namespace fuselab
