// A mixture of experts' MLP as a model writes it, the way attention_ops gives attention's chain:
//   Router -> MoEPermute -> GroupedLinear (width -> 2 hidden) -> SwiGLU -> GroupedLinear (hidden ->
//   width) -> MoEUnpermute
// each expert a SwiGLU MLP (Mixtral's block), the routing passed on hidden channels named after
// `name` (each MoE MLP of one Sequential needs a name of its own).
//
// What goes to the caller, as extra outputs in this order: with `losses`, the router's
// load-balancing loss and z-loss (scalars for the caller's objective); with `expert_counts`, the
// rows each expert took, int64 [experts] (MoEPermute's counts).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/basic/grouped_linear.h"
#include "ops/basic/router.h"

namespace fuselab {

struct MoEMlpConfig {
  int64_t width = 0, hidden = 0, experts = 0, top_k = 0;
  RouterScore score = RouterScore::Softmax;
  bool losses = false, expert_counts = false;
  double capacity_factor = 0;  // MoEPermute's: 0 is dropless
};

struct MoEMlp {
  std::shared_ptr<Router> router;
  std::shared_ptr<GroupedLinear> up, down;
  std::vector<std::shared_ptr<BasicOp>> ops;  // in order: the six ops above (moe_experts: the last five)
};

MoEMlp moe_mlp(const MoEMlpConfig& config, const std::string& name, Generator& gen);

// The experts alone, the five ops after the Router (MoEPermute to MoEUnpermute; `router` null),
// wired among themselves: the expert indices (MoEPermute's extra input) and the routing weights
// (MoEUnpermute's first) come from the caller, or from channels the caller names.
MoEMlp moe_experts(const MoEMlpConfig& config, const std::string& name, Generator& gen);

}  // namespace fuselab
