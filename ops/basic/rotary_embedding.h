// RotaryEmbedding: rotary position embedding on the query and key heads of qkv [B, T, (H + 2 K) D],
// between the QKV Linear and AttentionScores; the value heads pass unchanged. Hugging Face Llama's
// convention (each head's halves rotated, angles p theta^(-2e/D)); the math is in kernels/rotary.h.
//
// Token t sits at position offset + t, where the offset is the per-call argument "position_offset"
// (0 when the call gives none): a generation step that appends tokens after a cached prefix passes
// the prefix's length.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ops/basic/attention.h"
#include "ops/basic_op.h"

namespace fuselab {

// cos a and sin a of every (position offset + t, pair) for t < tokens, each [tokens, head_dim / 2],
// in `dtype` on `device`: the tables of kernels::ApplyRotary.
struct RotaryTables {
  Tensor cos, sin;
};
RotaryTables rotary_tables(int64_t tokens, int64_t head_dim, int64_t offset, double theta, DType dtype, Device device);

struct RotaryEmbeddingSaved {
  RotaryTables tables;
  NamedTensors tensors() const { return {{"cos", tables.cos}, {"sin", tables.sin}}; }
};

class RotaryEmbedding : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  explicit RotaryEmbedding(AttentionHeads heads, double theta = 10000);
  const AttentionHeads& heads() const { return heads_; }
  double theta() const { return theta_; }
  std::vector<std::string> call_arg_keys() const override { return {"position_offset"}; }
  // The position offset of this call (its per-call argument), checked so that the last of its
  // `tokens` positions is below 2^53.
  int64_t position_offset(const OpContext& ctx, int64_t tokens) const;
  // The tables for qkv in this call, after checking qkv's shape (an even head size among them).
  RotaryTables tables_for(const OpContext& ctx, const Tensor& qkv) const;
  OpForward op_forward(OpContext& ctx, const Tensor& qkv, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

 private:
  AttentionHeads heads_;
  double theta_;
};

}  // namespace fuselab
