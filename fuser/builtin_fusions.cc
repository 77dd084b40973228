// The built-in fusions: declarative patterns (pattern.h), registered at startup through the
// public registry calls, in priority order. Patterns are written in forward order for both passes.
// Every built-in fused op has CPU and CUDA kernels, so none depends on the device.
#include "fuser/fusion_check.h"
#include "fuser/pattern.h"
#include "fuser/registry.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/bias.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "ops/fused/backward_activation_bias.h"
#include "ops/fused/backward_add_rmsnorm.h"
#include "ops/fused/backward_linear_add.h"
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
