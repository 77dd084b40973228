#include "ops/basic/channel_bias.h"

#include "kernels/cpu/channel_bias.h"
#include "kernels/cuda/channel_bias.h"
#include "tensor/dispatch.h"
#include "tensor/factories.h"

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
  dispatch_floating_on_device(
      "ChannelBias", x,
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cpu::channel_bias_forward<T>(x.data<T>(), bias().data<T>(), y.data<T>(), l.batch, l.channels, l.plane);
      },
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cuda::channel_bias_forward<T>(x.cuda_data<T>(), bias().cuda_data<T>(), y.cuda_data<T>(), l.batch,
                                               l.channels, l.plane, x.device().index);
      });
  return {y, {}};
}

OpBackward ChannelBias::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  if (!ctx.params_require_grad.at(0)) return {dy, {}, {Tensor()}};
  const ChannelLayout l = layout_of(dy);
  Tensor db = empty_like(bias());
  dispatch_floating_on_device(
      "ChannelBias backward", dy,
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cpu::channel_bias_grad<T>(dy.data<T>(), db.data<T>(), l.batch, l.channels, l.plane);
      },
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cuda::channel_bias_grad<T>(dy.cuda_data<T>(), db.cuda_data<T>(), l.batch, l.channels, l.plane,
                                            dy.device().index);
      });
  return {dy, {}, {db}};
}

}  // namespace fuselab
