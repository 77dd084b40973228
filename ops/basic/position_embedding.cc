#include "ops/basic/position_embedding.h"

#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {

PositionEmbedding::PositionEmbedding(int64_t context, int64_t width, double init_std, Generator* gen)
    : BasicOp("PositionEmbedding"), context_(context), width_(width) {
  check(context > 0 && width > 0, "PositionEmbedding: sizes must be positive, got context ", context, ", width ",
        width);
  add_parameter("table", normal({context, width}, 0, init_std, DType::Float32, gen));
}

// x [B, T, C] is viewed as [B, T C] and P[:T] as one vector of T C, so the add is a row broadcast:
// one pass over x, and the grad of P[:T] is the column sum of dy viewed the same way.
namespace {

int64_t position_offset(const OpContext& ctx, const std::string& op) {
  const int64_t* offset = find_call_arg<int64_t>(ctx.call_args.get(), "position_offset", op);
  check(!offset || *offset >= 0, op, ": position_offset must be at least 0, got ", offset ? *offset : 0);
  return offset ? *offset : 0;
}

}  // namespace

OpForward PositionEmbedding::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  check_input(x, width_);
  const int64_t offset = position_offset(ctx, describe());
  check(x.dim() == 3 && offset + x.size(1) <= context_, describe(), ": input must be [batch, T, ", width_,
        "] with position_offset + T <= ", context_, ", got ", x.shape(), " at position_offset ", offset);
  const int64_t t = x.size(1);
  const Tensor y = math::binary(math::BinaryOp::Add, x.view({x.size(0), t * width_}, describe()),
                                table().slice(offset, offset + t).view({t * width_}), "PositionEmbedding");
  return {y.view(x.shape()), {}};
}

OpBackward PositionEmbedding::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  if (!ctx.params_require_grad.at(0)) return {dy, {}, {Tensor()}};
  const int64_t t = dy.size(1), offset = position_offset(ctx, describe());
  const Tensor used = math::sum_to(dy.view({dy.size(0), t * width_}), math::Broadcast::Row, {t * width_});
  if (t == context_) return {dy, {}, {used.view({context_, width_})}};
  Tensor grad = zeros({context_, width_}, dy.dtype(), dy.device());
  Tensor rows = grad.slice(offset, offset + t).view({t * width_});
  math::add_(rows, used);
  return {dy, {}, {grad}};
}

}  // namespace fuselab
