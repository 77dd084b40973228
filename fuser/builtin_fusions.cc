// The built-in fusions, registered at startup through the public registry calls, in priority
// order: within a pass, a fusion earlier in this list sees the op list first. Each is defined
// beside its fused op in ops/fused/ (its pattern, the reasons of its predicates, its example).
// Every built-in fused op has CPU and CUDA kernels, so none depends on the device.
#include "fuser/fusion_check.h"
#include "fuser/registry.h"
#include "ops/fused/backward_activation_bias.h"
#include "ops/fused/backward_add_norm.h"
#include "ops/fused/backward_linear_add.h"
#include "ops/fused/backward_linear_scale.h"
#include "ops/fused/flash_attention.h"
#include "ops/fused/forward_add_norm.h"
#include "ops/fused/forward_conv_bias_activation.h"
#include "ops/fused/forward_linear_bias_activation.h"
#include "ops/fused/forward_linear_bias_add.h"
#include "ops/fused/forward_linear_gated_linear_unit.h"
#include "ops/fused/forward_linear_scale_add.h"
#include "ops/fused/grouped_mlp.h"
#include "ops/fused/lm_head_cross_entropy.h"

namespace fuselab {
namespace {

const bool kRegistered = [] {
  const FusionDefinition builtins[] = {
      forward_linear_bias_add_fusion(),  // before ForwardLinearBiasActivation, which would take its Linear, Bias
      forward_linear_scale_add_fusion(),
      forward_linear_gated_linear_unit_fusion(),  // before ForwardLinearBiasActivation, which would take its Linear, Bias
      forward_linear_bias_activation_fusion(),
      forward_conv_bias_activation_fusion(),
      forward_add_norm_fusion(),  // after ForwardLinearBiasAdd: a residual add after a Linear goes there
      backward_linear_add_fusion(),
      backward_linear_scale_fusion(),  // after BackwardLinearAdd, which keeps a Linear after MakeExtraOutput
      backward_activation_bias_fusion(),
      backward_add_norm_fusion(),
      flash_attention_fusion(),
      routed_grouped_mlp_fusion(),  // before GroupedMlp, which would take its experts alone
      grouped_mlp_fusion(),
      scaled_grouped_mlp_fusion(),
      lm_head_cross_entropy_fusion(),
  };
  for (const FusionDefinition& fusion : builtins) {
    switch (fusion.pass) {
      case Pass::Forward: register_forward_fusion(fusion.name, fusion.fn); break;
      case Pass::Backward: register_backward_fusion(fusion.name, fusion.fn); break;
      case Pass::ForwardBackward: register_forward_backward_fusion(fusion.name, fusion.fn); break;
    }
    if (fusion.example) register_fusion_example(fusion.name, fusion.example);
  }
  return true;
}();

}  // namespace
}  // namespace fuselab
