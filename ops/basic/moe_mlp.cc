#include "ops/basic/moe_mlp.h"

#include "ops/basic/gated_linear_unit.h"
#include "ops/basic/moe_permute.h"

namespace fuselab {

MoEMlp moe_experts(const MoEMlpConfig& c, const std::string& name, Generator& gen) {
  auto permute = std::make_shared<MoEPermute>(c.experts, c.top_k, c.capacity_factor);
  permute->set_extra_output_channel(0, name + ".sizes", c.expert_counts);
  permute->set_extra_output_channel(1, name + ".slots", false);
  auto up = std::make_shared<GroupedLinear>(c.experts, c.width, 2 * c.hidden, &gen);
  up->set_extra_input_channel(0, name + ".sizes");
  auto down = std::make_shared<GroupedLinear>(c.experts, c.hidden, c.width, &gen);
  down->set_extra_input_channel(0, name + ".sizes");
  auto unpermute = std::make_shared<MoEUnpermute>(c.top_k);
  unpermute->set_extra_input_channel(1, name + ".slots");
  return {nullptr, up, down, {permute, up, std::make_shared<SwiGLU>(), down, unpermute}};
}

MoEMlp moe_mlp(const MoEMlpConfig& c, const std::string& name, Generator& gen) {
  auto router = std::make_shared<Router>(c.width, c.experts, c.top_k, c.score, &gen, c.losses);
  router->set_extra_output_channel(0, name + ".weights", /*to_caller=*/false);
  router->set_extra_output_channel(1, name + ".experts", false);
  MoEMlp mlp = moe_experts(c, name, gen);
  mlp.ops.front()->set_extra_input_channel(0, name + ".experts");
  mlp.ops.back()->set_extra_input_channel(0, name + ".weights");
  mlp.router = router;
  mlp.ops.insert(mlp.ops.begin(), router);
  return mlp;
}

}  // namespace fuselab
