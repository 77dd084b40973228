// The built-in fusions: declarative patterns (pattern.h), registered at startup through the
// public registry calls, in priority order. Patterns are written in forward order for both passes.
// Every built-in fused op has CPU and CUDA kernels, so none depends on the device.
#include "fuser/fusion_check.h"
#include "fuser/pattern.h"
#include "fuser/registry.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/bias.h"
#include "ops/basic/channel_bias.h"
#include "ops/basic/conv2d.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "ops/fused/backward_activation_bias.h"
#include "ops/fused/backward_add_rmsnorm.h"
#include "ops/fused/backward_linear_add.h"
#include "ops/fused/forward_conv_bias_activation.h"
#include "ops/fused/forward_linear_bias_activation.h"
#include "ops/fused/forward_linear_bias_add.h"
#include "tensor/factories.h"

namespace fuselab {
namespace {

template <class Fused>
std::shared_ptr<FusibleOp> make(const OpList& ops) {
  return std::make_shared<Fused>(ops);
}

// The Bias in slot 1 (if present) adds to the Linear in slot 0.
const PatternPredicate kBiasFitsLinear{"bias fits the linear", [](const PatternMatch& m, const FusionFacts&) {
  if (!m.has(1)) return std::string();
  const Linear& linear = m.get<Linear>(0);
  const Bias& bias = m.get<Bias>(1);
  return bias.features() == linear.out_features()
             ? std::string()
             : bias.describe() + " has " + std::to_string(bias.features()) + " features, " + linear.describe() +
                   " gives " + std::to_string(linear.out_features());
}};

// The ChannelBias in slot 1 adds to the Conv2d in slot 0.
const PatternPredicate kBiasFitsConv{"bias fits the convolution", [](const PatternMatch& m, const FusionFacts&) {
  const Conv2d& conv = m.get<Conv2d>(0);
  const ChannelBias& bias = m.get<ChannelBias>(1);
  return bias.channels() == conv.out_channels()
             ? std::string()
             : bias.describe() + " has " + std::to_string(bias.channels()) + " channels, " + conv.describe() +
                   " gives " + std::to_string(conv.out_channels());
}};

// An example model for check_fusion: `ops` in `dtype`, random inputs of [rows, width] (one extra
// input per AddExtraInput).
FusionExample example(std::vector<std::shared_ptr<BasicOp>> ops, int64_t rows, int64_t width, DType dtype,
                      Generator& gen) {
  FusionExample e{std::move(ops), uniform({rows, width}, -1, 1, dtype, &gen), {}};
  for (const auto& op : e.ops) {
    op->to(dtype);
    for (int k = 0; k < op->num_extra_inputs(); ++k) e.extra_inputs.push_back(uniform({rows, width}, -1, 1, dtype, &gen));
  }
  return e;
}

const bool kRegistered = [] {
  register_forward_fusion("ForwardLinearBiasAdd",
                          fuse_pattern({{slot<Linear>(), optional_slot<Bias>(), slot<AddExtraInput>()},
                                        {kBiasFitsLinear},
                                        make<ForwardLinearBiasAdd>}));
  register_forward_fusion("ForwardLinearBiasActivation",
                          fuse_pattern({{slot<Linear>(), slot<Bias>(), optional_slot<ReLU, GELU, SiLU>()},
                                        {kBiasFitsLinear},
                                        make<ForwardLinearBiasActivation>}));
  register_forward_fusion("ForwardConvBiasActivation",
                          fuse_pattern({{slot<Conv2d>(), slot<ChannelBias>(), optional_slot<ReLU, GELU, SiLU>()},
                                        {kBiasFitsConv},
                                        make<ForwardConvBiasActivation>}));
  register_backward_fusion("BackwardLinearAdd", fuse_pattern({{slot<MakeExtraOutput>(), slot<Linear>()},
                                                              {},
                                                              make<BackwardLinearAdd>}));
  register_backward_fusion("BackwardActivationBias", fuse_pattern({{slot<Bias>(), slot<ReLU, GELU, SiLU>()},
                                                                   {},
                                                                   make<BackwardActivationBias>}));
  register_backward_fusion("BackwardAddRMSNorm", fuse_pattern({{slot<MakeExtraOutput>(), slot<RMSNorm>()},
                                                               {},
                                                               make<BackwardAddRMSNorm>}));

  register_fusion_example("ForwardLinearBiasAdd", [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
    return example({std::make_shared<Linear>(w, w, &gen), std::make_shared<Bias>(w, 0.5, &gen),
                    std::make_shared<AddExtraInput>()}, rows, w, dtype, gen);
  });
  register_fusion_example("ForwardLinearBiasActivation", [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
    return example({std::make_shared<Linear>(w, w, &gen), std::make_shared<Bias>(w, 0.5, &gen),
                    std::make_shared<GELU>()}, rows, w, dtype, gen);
  });
  // rows and width pick the batch, the channels and the stride; images are 5 x 6 with padding 1.
  register_fusion_example("ForwardConvBiasActivation", [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
    const int64_t batch = 1 + rows % 3, channels = 1 + w % 4, stride = 1 + rows % 2;
    FusionExample e{{std::make_shared<Conv2d>(channels, channels + 1, 3, stride, 1, &gen),
                     std::make_shared<ChannelBias>(channels + 1, 0.5, &gen), std::make_shared<GELU>()},
                    uniform({batch, channels, 5, 6}, -1, 1, dtype, &gen),
                    {}};
    for (const auto& op : e.ops) op->to(dtype);
    return e;
  });
  register_fusion_example("BackwardLinearAdd", [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
    return example({std::make_shared<MakeExtraOutput>(), std::make_shared<Linear>(w, w, &gen)}, rows, w, dtype, gen);
  });
  register_fusion_example("BackwardActivationBias", [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
    return example({std::make_shared<Linear>(w, w, &gen), std::make_shared<Bias>(w, 0.5, &gen),
                    std::make_shared<SiLU>()}, rows, w, dtype, gen);
  });
  register_fusion_example("BackwardAddRMSNorm", [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
    return example({std::make_shared<AddExtraInput>(), std::make_shared<MakeExtraOutput>(),
                    std::make_shared<RMSNorm>(w)}, rows, w, dtype, gen);
  });
  return true;
}();

}  // namespace
}  // namespace fuselab
