#include "ops/basic/rotary_embedding.h"

#include <vector>

#include "kernels/rotary.h"
#include "tensor/factories.h"
#include "tensor/launch.h"

namespace fuselab {
namespace {

// Turns qkv (or, inverse, its grad) by the tables' angles.
Tensor apply_rotary(const char* op, const Tensor& x, const AttentionHeads& heads, const RotaryTables& tables,
                    bool inverse) {
  const kernels::AttentionShape s = attention_shape(op, x, heads);
  const kernels::RotaryShape shape{s.batch * s.tokens, s.tokens, s.heads + s.kv_heads, s.qkv_row(), s.head_dim};
  Tensor y = empty_like(x);
  launch_floating<WithBFloat16::Yes>(op, x, [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    return kernels::ApplyRotary<T>{shape, x.ptr<T>(), y.ptr<T>(), tables.cos.ptr<C>(), tables.sin.ptr<C>(), inverse};
  });
  return y;
}

}  // namespace

RotaryTables rotary_tables(int64_t tokens, int64_t head_dim, int64_t offset, double theta, DType dtype, Device device) {
  const int64_t half = head_dim / 2;
  std::vector<double> cos(size_t(tokens * half)), sin(cos.size());
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t e = 0; e < half; ++e) {
      const double a = kernels::rotary_angle(offset + t, e, head_dim, theta);
      cos[size_t(t * half + e)] = std::cos(a);
      sin[size_t(t * half + e)] = std::sin(a);
    }
  }
  auto table = [&](const std::vector<double>& values) {
    return from_vector(values, {tokens, half}).to(dtype).to(device);
  };
  return {table(cos), table(sin)};
}

RotaryEmbedding::RotaryEmbedding(AttentionHeads heads, double theta)
    : BasicOp("RotaryEmbedding"), heads_(heads), theta_(theta) {
  check(theta > 0, "RotaryEmbedding: theta must be positive, got ", theta);
}

int64_t RotaryEmbedding::position_offset(const OpContext& ctx, int64_t tokens) const {
  const int64_t* offset = find_call_arg<int64_t>(ctx.call_args.get(), "position_offset", describe());
  // Positions become angles in double: past 2^53 they are no longer whole numbers there.
  const int64_t last = (int64_t(1) << 53) - tokens;
  check(!offset || (*offset >= 0 && *offset <= last), describe(), ": position_offset must be in [0, 2^53 - ",
        tokens, "] for ", tokens, " tokens, got ", offset ? *offset : 0);
  return offset ? *offset : 0;
}

RotaryTables RotaryEmbedding::tables_for(const OpContext& ctx, const Tensor& qkv) const {
  check_input(qkv, -1);
  const kernels::AttentionShape s = attention_shape(describe(), qkv, heads_);
  check(s.head_dim % 2 == 0, describe(), ": the head size must be even to rotate its halves, got ", s.head_dim,
        " (qkv ", qkv.shape(), " with ", heads_.describe(), ")");
  return rotary_tables(s.tokens, s.head_dim, position_offset(ctx, s.tokens), theta_, compute_dtype(qkv.dtype()),
                       qkv.device());
}

OpForward RotaryEmbedding::op_forward(OpContext& ctx, const Tensor& qkv, const std::vector<Tensor>&) {
  RotaryTables tables = tables_for(ctx, qkv);
  Tensor y = apply_rotary("RotaryEmbedding", qkv, heads_, tables, /*inverse=*/false);
  if (ctx.requires_backward()) ctx.save<RotaryEmbeddingSaved>().tables = std::move(tables);
  return {y, {}};
}

OpBackward RotaryEmbedding::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const RotaryTables& tables = ctx.saved<RotaryEmbeddingSaved>(describe()).tables;
  return {apply_rotary("RotaryEmbedding backward", dy, heads_, tables, /*inverse=*/true), {}, {}};
}

}  // namespace fuselab
