// FlashAttention: an optional RotaryEmbedding, then AttentionScores, Softmax, an optional Dropout and
// AttentionValues (ops/basic/attention.h) as one joint forward-backward op. With the RotaryEmbedding,
// q and k are rotated as the kernel loads each tile, so the rotated qkv is never written. Its forward tiles over queries and
// keys with an online softmax and never allocates the [B, H, T, T] scores or probabilities; it
// saves qkv, the output and the per-row log-sum-exp only (FlashAttentionSaved, in the first op's
// context), and its backward recomputes the probabilities tile by tile. Dropout, when present and
// training, applies the Dropout op's own counter-based mask, drawn from that op's seed, so fused
// and unfused agree exactly. The math is in kernels/flash_attention.h. A call that gives
// AttentionScores a KV cache (generation: a few queries over many cached keys, no backward) runs
// the covered basic ops' forwards instead, which take the cache.
#pragma once

#include "kernels/flash_attention.h"
#include "ops/basic/dropout.h"
#include "ops/basic/rotary_embedding.h"
#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

struct FlashAttentionSaved {
  Tensor qkv;  // before the rotation, when there is one
  Tensor output;
  Tensor lse;  // [B, H, T], compute dtype
  kernels::FlashDropout dropout;
  RotaryTables rotary;  // undefined without a RotaryEmbedding
  NamedTensors tensors() const {
    return {{"qkv", qkv}, {"output", output}, {"lse", lse}, {"rotary_cos", rotary.cos}, {"rotary_sin", rotary.sin}};
  }
};

class FlashAttention : public FusedOp {
 public:
  // ops: [RotaryEmbedding], AttentionScores, Softmax, [Dropout], AttentionValues
  explicit FlashAttention(const OpList& ops);
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& qkv,
                             const TensorLists& extra_inputs) override;
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                               const TensorLists& grad_extra_outputs) override;

 private:
  bool rotates() const;           // covers a RotaryEmbedding (the first op)
  size_t scores_index() const;    // where AttentionScores is among the basic ops
  Dropout* dropout() const;        // the Dropout, if covered
  // The covered basic ops' forwards one after another, AttentionScores' extra output passed to
  // AttentionValues: the path of a call with a KV cache.
  FusedForward forward_unfused(const std::vector<OpContext*>& ctxs, const Tensor& qkv);
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition flash_attention_fusion();

}  // namespace fuselab
