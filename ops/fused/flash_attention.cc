#include "ops/fused/flash_attention.h"

#include <cmath>

#include "ops/basic/attention.h"
#include "ops/basic/dropout.h"
#include "ops/basic/rotary_embedding.h"
#include "ops/basic/softmax.h"
#include "ops/fusion_pattern.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/random.h"

namespace fuselab {
namespace {

// The kernels' view of the rotary tables (null pointers without them).
template <class T>
kernels::FlashRotary<compute_t<T>> rotary_view(const RotaryTables& tables) {
  if (!tables.cos.defined()) return {};
  return {tables.cos.ptr<compute_t<T>>(), tables.sin.ptr<compute_t<T>>()};
}

}  // namespace

FlashAttention::FlashAttention(const OpList& ops) : FusedOp("FlashAttention", ops, Pass::ForwardBackward) {}

bool FlashAttention::rotates() const { return dynamic_cast<const RotaryEmbedding*>(basic_ops().front().get()); }
size_t FlashAttention::scores_index() const { return rotates() ? 1 : 0; }
Dropout* FlashAttention::dropout() const { return dynamic_cast<Dropout*>(basic_ops().end()[-2].get()); }

FusedForward FlashAttention::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& qkv,
                                           const TensorLists&) {
  const size_t first = scores_index();
  const AttentionScores& scores = op<AttentionScores>(first);
  if (find_call_arg<Tensor>(ctxs[first]->call_args.get(), "kv_cache", scores.describe())) {
    return forward_unfused(ctxs, qkv);
  }
  scores.check_input(qkv, -1);
  const kernels::AttentionShape s = attention_shape(describe(), qkv, scores.heads());
  const RotaryTables rotary = rotates() ? op<RotaryEmbedding>(0).tables_for(*ctxs[0], qkv) : RotaryTables{};
  kernels::FlashDropout drop;
  const OpContext& dropout_ctx = *ctxs[ctxs.size() - 2];
  if (dropout() && dropout()->drops(dropout_ctx.training)) {
    drop = {dropout()->p(), dropout()->mask_seed(dropout_ctx)};
  }
  Tensor y = empty({s.batch, s.tokens, s.width()}, qkv.dtype(), qkv.device());
  Tensor lse = empty({s.batch, s.heads, s.tokens}, compute_dtype(qkv.dtype()), qkv.device());
  const double scale = 1.0 / std::sqrt(double(s.head_dim));
  launch_floating<WithBFloat16::Yes>("FlashAttention", qkv, [&](auto zero) {
    using T = decltype(zero);
    return kernels::FlashAttentionForward<T>{s,      qkv.ptr<T>(),    y.ptr<T>(), lse.ptr<compute_t<T>>(), compute_t<T>(scale),
                                             scores.causal(), drop, rotary_view<T>(rotary)};
  });
  if (any_requires_backward(ctxs)) ctxs[0]->save<FlashAttentionSaved>() = {qkv, y, lse, drop, rotary};
  TensorLists extra_outputs(basic_ops().size());
  // AttentionScores passes qkv on; rotated, it is never made, and the pattern lets it go nowhere else.
  extra_outputs[first] = {rotates() ? Tensor() : qkv};
  return {y, extra_outputs};
}

FusedForward FlashAttention::forward_unfused(const std::vector<OpContext*>& ctxs, const Tensor& qkv) {
  const size_t first = scores_index(), last = basic_ops().size() - 1;
  TensorLists extra_outputs(basic_ops().size());
  Tensor h = qkv;
  for (size_t i = 0; i < last; ++i) {
    OpForward step = basic_ops()[i]->op_forward(*ctxs[i], h, {});
    if (i == first) extra_outputs[first] = step.extra_outputs;
    h = step.output;
  }
  h = basic_ops()[last]->op_forward(*ctxs[last], h, extra_outputs[first]).output;
  if (rotates()) extra_outputs[first] = {Tensor()};  // as the fused path: the rotated qkv goes nowhere else
  return {h, extra_outputs};
}

FusedBackward FlashAttention::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                                             const TensorLists& grad_extra_outputs) {
  const size_t first = scores_index();
  const AttentionScores& scores = op<AttentionScores>(first);
  const FlashAttentionSaved& saved = ctxs[0]->saved<FlashAttentionSaved>(describe());
  const kernels::AttentionShape s = attention_shape(describe(), saved.qkv, scores.heads());
  Tensor dqkv = empty_like(saved.qkv);
  const double scale = 1.0 / std::sqrt(double(s.head_dim));
  launch_floating<WithBFloat16::Yes>("FlashAttention backward", saved.qkv, [&](auto zero) {
    using T = decltype(zero);
    return kernels::FlashAttentionBackward<T>{s,
                                              saved.qkv.ptr<T>(),
                                              saved.output.ptr<T>(),
                                              saved.lse.ptr<compute_t<T>>(),
                                              dy.ptr<T>(),
                                              ptr_or_null<T>(grad_extra_outputs[first].at(0)),
                                              dqkv.ptr<T>(),
                                              compute_t<T>(scale),
                                              scores.causal(),
                                              saved.dropout,
                                              rotary_view<T>(saved.rotary)};
  });
  // AttentionValues' qkv comes from AttentionScores inside this op, so its dv is already in dqkv.
  TensorLists grad_extra_inputs(basic_ops().size()), grad_params(basic_ops().size());
  grad_extra_inputs.back() = {Tensor()};
  return {dqkv, grad_extra_inputs, grad_params};
}

namespace {

// AttentionValues must read the qkv that AttentionScores passes on (a channel between them), or
// the fused op, which reads q, k and v from one tensor, would use the wrong values.
PatternPredicate values_read_the_scores_qkv() {
  return {"AttentionValues reads the qkv AttentionScores passes on", [](const PatternMatch& m, const FusionFacts&) {
            const AttentionScores& scores = m.get<AttentionScores>(1);
            const AttentionValues& values = m.get<AttentionValues>(4);
            const std::string& out = scores.extra_output_channel(0);
            return !out.empty() && out == values.extra_input_channel(0)
                       ? std::string()
                       : values.describe() + " reads channel '" + values.extra_input_channel(0) + "', " +
                             scores.describe() + " writes '" + out + "'";
          }};
}

// Both ops split qkv into the same query and key heads.
PatternPredicate heads_agree() {
  return {"the heads agree", [](const PatternMatch& m, const FusionFacts&) {
            const AttentionHeads &a = m.get<AttentionScores>(1).heads(), &b = m.get<AttentionValues>(4).heads();
            if (!(a == b)) return "AttentionScores has " + a.describe() + ", AttentionValues " + b.describe();
            if (!m.has(0) || m.get<RotaryEmbedding>(0).heads() == a) return std::string();
            return "RotaryEmbedding has " + m.get<RotaryEmbedding>(0).heads().describe() + ", AttentionScores " +
                   a.describe();
          }};
}

// The kernel never writes the rotated qkv, so AttentionScores may pass it on only to AttentionValues:
// not to the caller.
PatternPredicate rotated_qkv_stays_inside() {
  return {"the rotated qkv stays inside", [](const PatternMatch& m, const FusionFacts&) {
            const AttentionScores& scores = m.get<AttentionScores>(1);
            return !m.has(0) || !scores.extra_output_to_caller(0)
                       ? std::string()
                       : scores.describe() + " returns the rotated qkv to the caller";
          }};
}

}  // namespace

// The example: qkv [batch, tokens, (heads + 2 kv_heads) head_dim] from rows and width (grouped
// query heads when rows % 3 is not 0, rotary embedding first when the head size is even), causal on
// odd rows, with
// an inactive Dropout (p = 0: check_fusion runs fused and unfused one after the other, and an
// active one would draw a new mask for each run; fused_ops_test checks dropout on twin models).
FusionDefinition flash_attention_fusion() {
  FusionPattern pattern{{optional_slot<RotaryEmbedding>(), slot<AttentionScores>(), slot<Softmax>(),
                         optional_slot<Dropout>(), slot<AttentionValues>()},
                        {values_read_the_scores_qkv(), heads_agree(), rotated_qkv_stays_inside()},
                        [](const OpList& ops) { return std::make_shared<FlashAttention>(ops); }};
  return {"FlashAttention", Pass::ForwardBackward, fuse_pattern(std::move(pattern)),
          [](int64_t rows, int64_t width, DType dtype, Generator& gen) {
            const int64_t batch = 1 + rows % 2, tokens = 1 + rows % 37, head_dim = 1 + width % 5;
            const AttentionHeads heads{(1 + width % 2) * (1 + rows % 3), 1 + width % 2};
            std::vector<std::shared_ptr<BasicOp>> ops = attention_ops(heads, rows % 2 == 1, 0.0, 0);
            if (head_dim % 2 == 0) ops.insert(ops.begin(), std::make_shared<RotaryEmbedding>(heads));
            return FusionExample{ops,
                                 uniform({batch, tokens, heads.columns() * head_dim}, -1, 1, dtype, &gen),
                                 {}};
          }};
}

}  // namespace fuselab
