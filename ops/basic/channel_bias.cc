#include "ops/basic/channel_bias.h"

#include "kernels/channel_bias.h"
#include "tensor/factories.h"
#include "tensor/launch.h"

namespace fuselab {
namespace {

// [batch, channels, plane] of an [N, C, ...] tensor.
struct ChannelLayout {
  int64_t batch, channels, plane;
};
ChannelLayout layout_of(const Tensor& x) {
  return {x.size(0), x.size(1), x.size(0) * x.size(1) == 0 ? 0 : x.numel() / (x.size(0) * x.size(1))};
}

}  // namespace

ChannelBias::ChannelBias(int64_t channels, double init_bound, Generator* gen)
    : BasicOp("ChannelBias"), channels_(channels) {
  check(channels > 0, "ChannelBias: channels must be positive, got ", channels);
  add_parameter("bias", init_bound > 0 ? uniform({channels}, -init_bound, init_bound, DType::Float32, gen)
                                       : zeros({channels}));
}

void ChannelBias::check_channels(const Tensor& x) const {
  check_input(x, -1);
  check(x.dim() >= 2 && x.size(1) == channels_, describe(), ": input of shape ", x.shape(), " must be [batch, ",
        channels_, " channels, ...]");
}

OpForward ChannelBias::op_forward(OpContext&, const Tensor& x, const std::vector<Tensor>&) {
  check_channels(x);
  const ChannelLayout l = layout_of(x);
  Tensor y = empty_like(x);
  launch_floating("ChannelBias", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::ChannelBiasForward<T>{x.ptr<T>(), bias().ptr<T>(), y.ptr<T>(), l.batch, l.channels, l.plane};
  });
  return {y, {}};
}

OpBackward ChannelBias::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  if (!ctx.params_require_grad.at(0)) return {dy, {}, {Tensor()}};
  const ChannelLayout l = layout_of(dy);
  Tensor db = empty_like(bias());
  launch_floating("ChannelBias backward", dy, [&](auto zero) {
    using T = decltype(zero);
    return kernels::ChannelBiasGrad<T>{dy.ptr<T>(), db.ptr<T>(), l.batch, l.channels, l.plane};
  });
  return {dy, {}, {db}};
}

}  // namespace fuselab
