#include "ops/basic/dropout.h"

#include "kernels/dropout.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

Dropout::Dropout(double p, uint64_t seed) : BasicOp("Dropout"), p_(p), gen_(seed) {
  check(0 <= p && p < 1, "Dropout: p must be in [0, 1), got ", p);
}

uint64_t Dropout::mask_seed(const OpContext& ctx) {
  const int64_t* seed = find_call_arg<int64_t>(ctx.call_args.get(), "seed", describe());
  return seed ? uint64_t(*seed) : draw_seed();
}

OpForward Dropout::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  check_input(x, -1);
  if (!drops(ctx.training)) {
    if (ctx.requires_backward()) ctx.save<DropoutSaved>();  // an undefined mask means identity
    return {x, {}};
  }
  Tensor mask = empty_like(x);
  const uint64_t seed = mask_seed(ctx);
  launch_floating("Dropout", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::DropoutMask<T>{seed, p_, mask.ptr<T>(), mask.numel()};
  });
  if (ctx.requires_backward()) ctx.save<DropoutSaved>().scaled_mask = mask;
  return {math::binary(math::BinaryOp::Mul, x, mask), {}};
}

OpBackward Dropout::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const Tensor& mask = ctx.saved<DropoutSaved>(describe()).scaled_mask;
  return {mask.defined() ? math::binary(math::BinaryOp::Mul, dy, mask) : dy, {}, {}};
}

}  // namespace fuselab
