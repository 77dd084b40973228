#include "examples/kv_cache.h"

#include "autograd/grad_mode.h"
#include "ops/basic/attention.h"
#include "ops/basic/position_embedding.h"
#include "ops/basic/rotary_embedding.h"
#include "tensor/factories.h"

namespace fuselab::examples {

namespace {

// The ops a KV cache hands per-call arguments: the positions' (an offset) and the attention's.
bool takes_position_offset(const BasicOp* op) {
  return dynamic_cast<const RotaryEmbedding*>(op) || dynamic_cast<const PositionEmbedding*>(op);
}
bool takes_cache_arguments(const BasicOp* op) {
  return dynamic_cast<const AttentionScores*>(op) || takes_position_offset(op);
}

// Per-call arguments reach only a Sequential's own ops: one of those ops inside a nested Sequential
// would run without the cache (attending to the new tokens alone) or at the wrong positions.
void check_none_nested(const Sequential& model) {
  for (const Sequential::Entry& entry : model) {
    if (!entry.module || !entry.module->nested()) continue;
    for (const std::shared_ptr<BasicOp>& op : entry.module->nested()->ops()) {
      check(!takes_cache_arguments(op.get()), "KVCache: ", op->describe(), " is inside the nested Sequential ",
            entry.name(), ", which a KV cache cannot reach: put the model's ops in one Sequential");
    }
    check_none_nested(*entry.module->nested());
  }
}

}  // namespace

KVCache::KVCache(const Sequential& model, int64_t batch, int64_t capacity, int64_t head_dim, DType dtype,
                 Device device)
    : batch_(batch), capacity_(capacity) {
  check(batch > 0 && capacity > 0 && head_dim > 0, "KVCache: batch ", batch, ", capacity ", capacity,
        " and head_dim ", head_dim, " must be positive");
  check_none_nested(model);
  for (const std::shared_ptr<BasicOp>& op : model.ops()) {
    const auto* scores = dynamic_cast<const AttentionScores*>(op.get());
    if (!scores) continue;
    attentions_.push_back(op);
    buffers_.push_back(empty({batch, capacity, scores->heads().columns() * head_dim}, dtype, device));
  }
}

Tensor KVCache::forward(Sequential& model, const Tensor& ids) {
  check(!is_grad_enabled(), "KVCache::forward: a KV cache is for generation, without grad (NoGradGuard)");
  check(ids.dim() == 2 && ids.size(0) == batch_ && ids.size(1) > 0, "KVCache::forward: ids ", ids.shape(),
        " must be [", batch_, ", T] with T >= 1");
  const int64_t tokens = ids.size(1);
  check(length_ + tokens <= capacity_, "KVCache::forward: ", length_, " cached + ", tokens,
        " new tokens exceed the cache's capacity of ", capacity_, " (the model's context)");
  std::vector<OpCallArgs> args;
  for (size_t i = 0; i < attentions_.size(); ++i) {
    args.push_back({attentions_[i], {{"kv_cache", buffers_[i]}, {"cache_length", length_}}});
  }
  for (const std::shared_ptr<BasicOp>& op : model.ops()) {
    if (takes_position_offset(op.get())) {
      args.push_back({op, {{"position_offset", length_}}});
    }
  }
  const Tensor out = model(ids, {}, args).output;
  length_ += tokens;
  return out;
}

}  // namespace fuselab::examples
