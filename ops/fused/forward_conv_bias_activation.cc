#include "ops/fused/forward_conv_bias_activation.h"

#include "kernels/conv2d.h"
#include "ops/basic/activation.h"
#include "ops/basic/channel_bias.h"
#include "ops/basic/conv2d.h"
#include "ops/fusion_pattern.h"
#include "tensor/factories.h"
#include "tensor/launch.h"

namespace fuselab {

ForwardConvBiasActivation::ForwardConvBiasActivation(const OpList& ops)
    : FusedOp("ForwardConvBiasActivation", ops, Pass::Forward) {}

FusedForward ForwardConvBiasActivation::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                                                      const TensorLists&) {
  Conv2d& conv = op<Conv2d>(0);
  ChannelBias& bias = op<ChannelBias>(1);
  const kernels::Conv2dGeometry g = conv.geometry(x);
  const Activation act = basic_ops().size() == 3 ? op<ActivationOp>(2).activation() : Activation::None;
  Tensor y = empty(conv.output_shape(g), x.dtype(), x.device());
  bias.check_channels(y);
  Tensor pre;  // the activation's saved input; for ReLU y serves (ActivationSaved)
  const bool keep_pre = act != Activation::None && act != Activation::ReLU && ctxs[2]->requires_backward();
  if (keep_pre) pre = empty_like(y);
  launch_floating("ForwardConvBiasActivation", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::Conv2dBiasActivationForward<T>{g,   x.ptr<T>(),          conv.weight().ptr<T>(), bias.bias().ptr<T>(),
                                                   act, ptr_or_null<T>(pre), y.ptr<T>()};
  });
  Conv2d::save_for_backward(*ctxs[0], x, conv.weight());
  if (act != Activation::None) ActivationOp::save_for_backward(*ctxs[2], act == Activation::ReLU ? y : pre);
  return {y, TensorLists(basic_ops().size())};
}

namespace {

// The ChannelBias must have one value per output channel of the Conv2d, or adding it in the
// convolution's epilogue would be wrong.
std::string bias_fits_conv(const PatternMatch& m, const FusionFacts&) {
  const Conv2d& conv = m.get<Conv2d>(0);
  const ChannelBias& bias = m.get<ChannelBias>(1);
  return bias.channels() == conv.out_channels()
             ? std::string()
             : bias.describe() + " has " + std::to_string(bias.channels()) + " channels, " + conv.describe() +
                   " gives " + std::to_string(conv.out_channels());
}

}  // namespace

FusionDefinition forward_conv_bias_activation_fusion() {
  FusionPattern pattern{{slot<Conv2d>(), slot<ChannelBias>(), optional_slot<ReLU, GELU, SiLU>()},
                        {{"bias fits the convolution", bias_fits_conv}},
                        [](const OpList& ops) { return std::make_shared<ForwardConvBiasActivation>(ops); }};
  // rows and width pick the batch, the channels and the stride; images are 5 x 6 with padding 1.
  return {"ForwardConvBiasActivation", Pass::Forward, fuse_pattern(std::move(pattern)),
          [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
            const int64_t batch = 1 + rows % 3, channels = 1 + w % 4, stride = 1 + rows % 2;
            FusionExample e{{std::make_shared<Conv2d>(channels, channels + 1, 3, stride, 1, &gen),
                             std::make_shared<ChannelBias>(channels + 1, 0.5, &gen), std::make_shared<GELU>()},
                            uniform({batch, channels, 5, 6}, -1, 1, dtype, &gen),
                            {}};
            for (const auto& op : e.ops) op->to(dtype);
            return e;
          }};
}

}  // namespace fuselab
