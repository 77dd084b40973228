#include "ops/basic/attention.h"

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

OpForward AttentionScores::op_forward(OpContext& ctx, const Tensor& qkv, const std::vector<Tensor>&) {
  check_input(qkv, -1);
  const kernels::AttentionShape s = attention_shape(describe(), qkv, heads_);
  Tensor scores = empty({s.batch, s.heads, s.tokens, s.tokens}, qkv.dtype(), qkv.device());
  launch_floating<WithBFloat16::Yes>("AttentionScores", qkv, [&](auto zero) {
    using T = decltype(zero);
    return kernels::AttentionScoresForward<T>{s, qkv.ptr<T>(), scores.ptr<T>(), compute_t<T>(score_scale(s)), causal_};
  });
  if (ctx.requires_backward()) ctx.save<AttentionScoresSaved>().qkv = qkv;
  return {scores, {qkv}};
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
  const kernels::AttentionShape s = attention_shape(describe(), qkv, heads_);
  check(probs.shape() == Shape{s.batch, s.heads, s.tokens, s.tokens} && probs.dtype() == qkv.dtype() &&
            probs.device() == qkv.device(),
        describe(), ": probabilities ", probs.shape(), " ", probs.dtype(), " on ", probs.device(),
        " do not match qkv ", qkv.shape(), " ", qkv.dtype(), " on ", qkv.device(), ": expected [", s.batch, ", ",
        s.heads, ", ", s.tokens, ", ", s.tokens, "]");
  Tensor y = empty({s.batch, s.tokens, s.width()}, qkv.dtype(), qkv.device());
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
