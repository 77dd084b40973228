// ChannelPlan: where each extra input of a Sequential's basic ops comes from, and where each extra
// output goes. An extra input bound to a channel reads the extra output of the one earlier op
// that produces that channel; the others are the call's arguments, in op order. Extra outputs go
// to the caller (in op order) unless hidden, and to every consumer of their channel.
#pragma once

#include <memory>
#include <vector>

#include "ops/basic_op.h"

namespace fuselab {

struct SlotRef {
  size_t op;
  int slot;
};

struct ExtraInputSource {
  int caller_index = -1;  // >= 0: the call's extra input with this index
  SlotRef producer{0, 0};  // otherwise: this extra output
};

struct ChannelPlan {
  std::vector<std::vector<ExtraInputSource>> inputs;      // [op][slot]
  std::vector<std::vector<int>> output_caller_index;      // [op][slot], -1 when hidden
  std::vector<std::vector<std::vector<size_t>>> consumers;  // [op][slot] -> consuming ops
  int num_caller_inputs = 0;
  int num_caller_outputs = 0;

  // Throws on a channel with no producer, a consumer before its producer, or two producers.
  static ChannelPlan build(const std::vector<std::shared_ptr<BasicOp>>& ops);
};

}  // namespace fuselab
