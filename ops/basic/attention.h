// Attention as basic ops, the path that materializes the probabilities (as PyTorch's math
// attention does). After a QKV Linear (+ Bias) giving qkv [B, T, (H + 2 K) D] = [q | k | v], with H
// query heads and K key and value heads (AttentionHeads; K = H unless grouped), and optionally a
// RotaryEmbedding on q and k:
//
//   AttentionScores(heads, causal)  s = q k^T / sqrt(D) per head   [B, H, T, T]
//                                   (-inf above the diagonal when causal); qkv goes on as an
//                                   extra output, for AttentionValues
//   Softmax                         p = softmax(s) over the last dim
//   Dropout                         (optional) on p
//   AttentionValues(heads)          y = p v per head, heads side by side   [B, T, H D]; qkv comes in
//                                   as an extra input (a channel from AttentionScores)
//
// With a KV cache (generation, forward without grad), AttentionScores takes the per-call
// arguments "kv_cache", a Tensor [B, capacity, (H + 2 K) D] of the qkv rows of earlier tokens that
// the caller owns, and "cache_length", how many rows of it are filled (P). It writes this call's
// qkv rows into the cache at rows [P, P + T), and its queries attend over all P + T tokens (token
// P + i sees keys up to P + i when causal): scores [B, H, T, P + T]. It passes the cache's first
// P + T rows on to AttentionValues, which takes the probabilities' last T rows as queries.
// examples/kv_cache.h fills these arguments for a whole model.
//
// Backward: AttentionValues gives dp = dy v^T and, for its extra input, dv = p^T dy in qkv's v
// columns; AttentionScores gives dq = ds k / sqrt(D) and dk = ds^T q / sqrt(D) in the q and k
// columns and adds the grad of its extra output (dv). The math is in kernels/attention.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "ops/basic_op.h"

namespace fuselab {

struct AttentionScoresSaved {
  Tensor qkv;
  NamedTensors tensors() const { return {{"qkv", qkv}}; }
};

struct AttentionValuesSaved {
  Tensor probs;
  Tensor qkv;
  NamedTensors tensors() const { return {{"probs", probs}, {"qkv", qkv}}; }
};

// The heads of an attention: `heads` query heads sharing `kv_heads` key and value heads, query head
// h reading key head h / (heads / kv_heads). kv_heads = heads (an AttentionHeads made from one
// number) is multi-head attention, 1 is multi-query attention, a divisor between them grouped-query.
struct AttentionHeads {
  int64_t heads, kv_heads;
  AttentionHeads(int64_t heads) : AttentionHeads(heads, heads) {}  // NOLINT: multi-head by default
  AttentionHeads(int64_t heads, int64_t kv_heads);
  int64_t columns() const { return heads + 2 * kv_heads; }  // head-sized column blocks of qkv
  bool operator==(const AttentionHeads& o) const { return heads == o.heads && kv_heads == o.kv_heads; }
  std::string describe() const;
};

// The sizes of an attention over qkv [B, T, (heads + 2 kv_heads) D]; throws naming `op` when qkv
// is not of that shape.
kernels::AttentionShape attention_shape(const std::string& op, const Tensor& qkv, const AttentionHeads& heads);

class AttentionScores : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  AttentionScores(AttentionHeads heads, bool causal);
  const AttentionHeads& heads() const { return heads_; }
  bool causal() const { return causal_; }
  int num_extra_outputs() const override { return 1; }
  std::vector<std::string> call_arg_keys() const override { return {"kv_cache", "cache_length"}; }
  OpForward op_forward(OpContext& ctx, const Tensor& qkv, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dscores, const std::vector<Tensor>& grad_extra) override;

 private:
  // qkv written into this call's KV cache after its P filled rows, and the cache's first P + T
  // rows (the tensor attended over); qkv itself when the call gave no cache.
  Tensor attend_over(const OpContext& ctx, const Tensor& qkv) const;

  AttentionHeads heads_;
  bool causal_;
};

class AttentionValues : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  explicit AttentionValues(AttentionHeads heads);
  const AttentionHeads& heads() const { return heads_; }
  int num_extra_inputs() const override { return 1; }
  OpForward op_forward(OpContext& ctx, const Tensor& probs, const std::vector<Tensor>& extra) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

 private:
  AttentionHeads heads_;
};

// The chain as a model writes it: AttentionScores(heads, causal), Softmax, Dropout(dropout,
// seed), AttentionValues(heads), with qkv passed on the hidden channel `channel` (each chain of
// one Sequential needs a name of its own). FlashAttention fuses exactly this chain.
std::vector<std::shared_ptr<BasicOp>> attention_ops(AttentionHeads heads, bool causal, double dropout, uint64_t seed,
                                                    const std::string& channel = "qkv");

}  // namespace fuselab
