// KVCache: generation that runs each new token through the model once. For every AttentionScores
// op of a model it keeps a buffer [batch, capacity, qkv columns] of the qkv rows of the tokens seen
// so far (ops/basic/attention.h's "kv_cache" argument); forward() hands each call's ops their
// per-call arguments (the buffers, the tokens cached so far as "cache_length", and that count as the
// "position_offset" of RotaryEmbedding and PositionEmbedding) and advances the count. A prompt is
// one forward over its tokens (prefill), then each generated token one forward of one token
// (decode), which attends over the cached keys and values instead of re-running the window. The
// model's attention and position ops must be its own, not inside a nested Sequential (refused:
// per-call arguments reach only a Sequential's own ops).
//
// The buffers hold whole qkv rows, the queries' columns too (unused once written): the attention
// ops read keys and values from the same layout as without a cache. Forward only, without grad.
#pragma once

#include <cstdint>
#include <vector>

#include "fuser/sequential.h"

namespace fuselab::examples {

class KVCache {
 public:
  // Buffers for the AttentionScores ops of `model` (none for a model without blocks), each of its qkv's
  // (heads + 2 kv_heads) head_dim columns, for `batch` sequences of up to `capacity` tokens.
  KVCache(const Sequential& model, int64_t batch, int64_t capacity, int64_t head_dim, DType dtype, Device device);

  int64_t length() const { return length_; }  // tokens cached
  int64_t capacity() const { return capacity_; }
  void clear() { length_ = 0; }

  // The model on the next tokens ids [batch, T] (T >= 1, length() + T <= capacity()), attending
  // over the cached ones too; its output is the model's for those T tokens only.
  Tensor forward(Sequential& model, const Tensor& ids);

 private:
  std::vector<std::shared_ptr<BasicOp>> attentions_;
  std::vector<Tensor> buffers_;
  int64_t batch_, capacity_, length_ = 0;
};

}  // namespace fuselab::examples
