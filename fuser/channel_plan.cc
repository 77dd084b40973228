#include "fuser/channel_plan.h"

#include <map>

namespace fuselab {

ChannelPlan ChannelPlan::build(const std::vector<std::shared_ptr<BasicOp>>& ops) {
  ChannelPlan plan;
  std::map<std::string, SlotRef> producers;
  for (size_t i = 0; i < ops.size(); ++i) {
    for (int s = 0; s < ops[i]->num_extra_outputs(); ++s) {
      const std::string& channel = ops[i]->extra_output_channel(s);
      if (channel.empty()) continue;
      const auto [it, inserted] = producers.insert({channel, SlotRef{i, s}});
      check(inserted, "Sequential: channel '", channel, "' has two producers, ", ops[it->second.op]->describe(),
            " and ", ops[i]->describe());
    }
  }
  plan.inputs.resize(ops.size());
  plan.output_caller_index.resize(ops.size());
  plan.consumers.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    plan.consumers[i].resize(ops[i]->num_extra_outputs());
    for (int s = 0; s < ops[i]->num_extra_outputs(); ++s) {
      plan.output_caller_index[i].push_back(ops[i]->extra_output_to_caller(s) ? plan.num_caller_outputs++ : -1);
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    for (int s = 0; s < ops[i]->num_extra_inputs(); ++s) {
      const std::string& channel = ops[i]->extra_input_channel(s);
      ExtraInputSource source;
      if (channel.empty()) {
        source.caller_index = plan.num_caller_inputs++;
      } else {
        auto it = producers.find(channel);
        check(it != producers.end(), "Sequential: ", ops[i]->describe(), " reads channel '", channel,
              "', which no op produces");
        check(it->second.op < i, "Sequential: ", ops[i]->describe(), " reads channel '", channel,
              "' before its producer ", ops[it->second.op]->describe(), " runs");
        source.producer = it->second;
        plan.consumers[it->second.op][it->second.slot].push_back(i);
      }
      plan.inputs[i].push_back(source);
    }
  }
  return plan;
}

}  // namespace fuselab
