// LMHeadCrossEntropy: a language model's output Linear (no bias) and its CrossEntropy loss as one
// joint forward-backward op that never holds the [tokens, vocab] logits.
//
// The forward takes the rows (tokens) a chunk at a time, with chunks sized so that one chunk's
// logits take at most kChunkLogitsBytes: each chunk's logits z = x_c W^T come from one GEMM, then
// the loss terms lse(z_r) - z_r[label_r] (max-subtracted, kernels/softmax.h). It saves the input,
// the weight, the labels and the per-row log-sum-exp only. The backward recomputes each chunk's
// logits, turns them in place into
//   dz = (softmax(z) - onehot(label)) dloss / counted    (0 on ignored rows)
// and adds up dx_c = dz W and dW += dz^T x_c chunk by chunk. At 8192 tokens and a vocabulary of
// 8192 in float32 the unfused pair holds 256 MiB of logits (and as much again for their grad);
// this op holds one 16 MiB chunk. The loss is the CrossEntropy op's, to the rounding of the sums.
#pragma once

#include <cstdint>

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

struct LMHeadCrossEntropySaved {
  Tensor input;    // [rows, in]
  Tensor weight;   // [vocab, in]
  Tensor labels;   // [rows]
  Tensor lse;      // [rows]
  Tensor counted;  // the number of counted rows, a scalar on the device
  Shape input_shape;
  NamedTensors tensors() const {
    return {{"input", input}, {"weight", weight}, {"labels", labels}, {"lse", lse}};
  }
};

class LMHeadCrossEntropy : public FusedOp {
 public:
  // The most bytes of logits one chunk makes: large enough that each chunk's GEMM runs at full
  // speed (512 rows of a 8192 float32 vocabulary), small enough to stay far below the unfused logits.
  static constexpr int64_t kChunkLogitsBytes = int64_t(16) << 20;
  // Rows per chunk for a vocabulary in `dtype`: at least one.
  static int64_t chunk_rows(int64_t vocab, DType dtype);

  // ops: Linear, CrossEntropy
  explicit LMHeadCrossEntropy(const OpList& ops);
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                             const TensorLists& extra_inputs) override;
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dloss,
                               const TensorLists& grad_extra_outputs) override;
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition lm_head_cross_entropy_fusion();

}  // namespace fuselab
