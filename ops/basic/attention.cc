#include "ops/basic/attention.h"

#include <algorithm>
#include <cmath>

#include "ops/basic/dropout.h"
#include "ops/basic/softmax.h"
#include "tensor/factories.h"
#include "tensor/launch.h"

namespace fuselab {
namespace {

double score_scale(const kernels::AttentionShape& s) { return 1.0 / std::sqrt(double(s.head_dim)); }

}  // namespace

AttentionHeads::AttentionHeads(int64_t heads, int64_t kv_heads) : heads(heads), kv_heads(kv_heads) {
  check(heads > 0 && kv_heads > 0 && heads % kv_heads == 0, "attention: ", describe(),
        ": heads must be positive and a multiple of kv_heads");
}

std::string AttentionHeads::describe() const {
  return std::to_string(heads) + " heads" + (kv_heads == heads ? "" : " over " + std::to_string(kv_heads) + " kv_heads");
}

kernels::AttentionShape attention_shape(const std::string& op, const Tensor& qkv, const AttentionHeads& heads) {
  check(qkv.defined() && qkv.dim() == 3 && qkv.size(2) > 0 && qkv.size(2) % heads.columns() == 0, op,
        ": qkv of shape ", qkv.defined() ? qkv.shape() : Shape{}, " must be [batch, tokens, ", heads.columns(),
        " * head_dim] with ", heads.describe());
  return {qkv.size(0), heads.heads, heads.kv_heads, qkv.size(1), qkv.size(2) / heads.columns()};
}

AttentionScores::AttentionScores(AttentionHeads heads, bool causal)
    : BasicOp("AttentionScores"), heads_(heads), causal_(causal) {}

Tensor AttentionScores::attend_over(const OpContext& ctx, const Tensor& qkv) const {
  const Tensor* cache = find_call_arg<Tensor>(ctx.call_args.get(), "kv_cache", describe());
  const int64_t* length = find_call_arg<int64_t>(ctx.call_args.get(), "cache_length", describe());
  check(bool(cache) == bool(length), describe(), ": a KV cache takes both kv_cache and cache_length");
  if (!cache) return qkv;
  check(!ctx.requires_backward(), describe(), ": a KV cache is for a forward without grad (generation)");
  const int64_t batch = qkv.size(0), tokens = qkv.size(1), columns = qkv.size(2), past = *length;
  check(cache->defined() && cache->dim() == 3 && cache->size(0) == batch && cache->size(2) == columns &&
            cache->dtype() == qkv.dtype() && cache->device() == qkv.device(),
        describe(), ": kv_cache ", cache->defined() ? cache->shape() : Shape{}, " ",
        cache->defined() ? dtype_name(cache->dtype()) : "", " on ", cache->defined() ? cache->device().str() : "",
        " does not hold qkv ", qkv.shape(), " ", dtype_name(qkv.dtype()), " on ", qkv.device().str(),
        ": expected [", batch, ", capacity, ", columns, "]");
  const int64_t capacity = cache->size(1);
  check(past >= 0 && past + tokens <= capacity, describe(), ": cache_length ", past, " + ", tokens,
        " new tokens do not fit the KV cache's ", capacity);
  Tensor full = batch == 1 ? Tensor() : empty({batch, past + tokens, columns}, qkv.dtype(), qkv.device());
  for (int64_t b = 0; b < batch; ++b) {
    const Tensor rows = cache->slice(b, b + 1).view({capacity, columns});
    rows.slice(past, past + tokens).copy_(qkv.slice(b, b + 1).view({tokens, columns}));
    if (batch > 1) full.slice(b, b + 1).view({past + tokens, columns}).copy_(rows.slice(0, past + tokens));
  }
  return batch == 1 ? cache->view({capacity, columns}).slice(0, past + tokens).view({1, past + tokens, columns}) : full;
}

OpForward AttentionScores::op_forward(OpContext& ctx, const Tensor& qkv, const std::vector<Tensor>&) {
  check_input(qkv, -1);
  attention_shape(describe(), qkv, heads_);
  const Tensor keys = attend_over(ctx, qkv);
  kernels::AttentionShape s = attention_shape(describe(), keys, heads_);
  s.past = keys.size(1) - qkv.size(1);
  Tensor scores = empty({s.batch, s.heads, s.queries(), s.tokens}, qkv.dtype(), qkv.device());
  launch_floating<WithBFloat16::Yes>("AttentionScores", qkv, [&](auto zero) {
    using T = decltype(zero);
    return kernels::AttentionScoresForward<T>{s, keys.ptr<T>(), scores.ptr<T>(), compute_t<T>(score_scale(s)), causal_};
  });
  if (ctx.requires_backward()) ctx.save<AttentionScoresSaved>().qkv = qkv;
  return {scores, {keys}};
}

OpBackward AttentionScores::op_backward(OpContext& ctx, const Tensor& dscores, const std::vector<Tensor>& grad_extra) {
  const Tensor& qkv = ctx.saved<AttentionScoresSaved>(describe()).qkv;
  const kernels::AttentionShape s = attention_shape(describe(), qkv, heads_);
  // The grad of the qkv passed on (AttentionValues' dv) plus this op's dq and dk.
  Tensor dqkv = empty_like(qkv);
  launch_floating<WithBFloat16::Yes>("AttentionScores backward", qkv, [&](auto zero) {
    using T = decltype(zero);
    return kernels::AttentionScoresBackward<T>{s,
                                               qkv.ptr<T>(),
                                               dscores.ptr<T>(),
                                               ptr_or_null<T>(grad_extra.at(0)),
                                               dqkv.ptr<T>(),
                                               compute_t<T>(score_scale(s)),
                                               causal_};
  });
  return {dqkv, {}, {}};
}

AttentionValues::AttentionValues(AttentionHeads heads) : BasicOp("AttentionValues"), heads_(heads) {}

OpForward AttentionValues::op_forward(OpContext& ctx, const Tensor& probs, const std::vector<Tensor>& extra) {
  check_input(probs, -1);
  const Tensor& qkv = extra.at(0);
  kernels::AttentionShape s = attention_shape(describe(), qkv, heads_);
  // Fewer queries than keys: the last ones, after a KV cache's earlier tokens (no backward then).
  const int64_t queries = probs.dim() == 4 && !ctx.requires_backward() ? probs.size(2) : s.tokens;
  s.past = s.tokens - std::min(queries, s.tokens);
  check(probs.shape() == Shape{s.batch, s.heads, s.queries(), s.tokens} && probs.dtype() == qkv.dtype() &&
            probs.device() == qkv.device(),
        describe(), ": probabilities ", probs.shape(), " ", probs.dtype(), " on ", probs.device(),
        " do not match qkv ", qkv.shape(), " ", qkv.dtype(), " on ", qkv.device(), ": expected [", s.batch, ", ",
        s.heads, ", ", s.queries(), ", ", s.tokens, "]");
  Tensor y = empty({s.batch, s.queries(), s.width()}, qkv.dtype(), qkv.device());
  launch_floating<WithBFloat16::Yes>("AttentionValues", qkv, [&](auto zero) {
    using T = decltype(zero);
    return kernels::AttentionValuesForward<T>{s, probs.ptr<T>(), qkv.ptr<T>(), y.ptr<T>()};
  });
  if (ctx.requires_backward()) ctx.save<AttentionValuesSaved>() = {probs, qkv};
  return {y, {}};
}

OpBackward AttentionValues::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const AttentionValuesSaved& saved = ctx.saved<AttentionValuesSaved>(describe());
  const kernels::AttentionShape s = attention_shape(describe(), saved.qkv, heads_);
  Tensor dprobs = ctx.input_requires_grad ? empty_like(saved.probs) : Tensor();
  Tensor dqkv = ctx.extra_inputs_require_grad ? empty_like(saved.qkv) : Tensor();
  launch_floating<WithBFloat16::Yes>("AttentionValues backward", dy, [&](auto zero) {
    using T = decltype(zero);
    return kernels::AttentionValuesBackward<T>{s,           saved.probs.ptr<T>(), saved.qkv.ptr<T>(),
                                               dy.ptr<T>(), ptr_or_null<T>(dprobs), ptr_or_null<T>(dqkv)};
  });
  return {dprobs, {dqkv}, {}};
}

std::vector<std::shared_ptr<BasicOp>> attention_ops(AttentionHeads heads, bool causal, double dropout, uint64_t seed,
                                                    const std::string& channel) {
  auto scores = std::make_shared<AttentionScores>(heads, causal);
  auto values = std::make_shared<AttentionValues>(heads);
  scores->set_extra_output_channel(0, channel, /*to_caller=*/false);
  values->set_extra_input_channel(0, channel);
  return {scores, std::make_shared<Softmax>(), std::make_shared<Dropout>(dropout, seed), values};
}

}  // namespace fuselab
