// Declarative fusion patterns: a sequence of slots, each accepting one of some basic-op types
// (optionally absent), plus named predicates that may reject a match with a reason, and a factory
// that builds the fused op from the matched ops. fuse_pattern() turns one into a fusion function,
// so it registers like any other:
//
//   register_forward_fusion("ForwardLinearBiasActivation", fuse_pattern({
//       {slot<Linear>(), slot<Bias>(), optional_slot<ReLU, GELU, SiLU>()},
//       {{"bias fits the linear", bias_fits}},
//       [](const OpList& ops) { return std::make_shared<ForwardLinearBiasActivation>(ops); }}));
//
// Matching is greedy, left to right: an optional slot takes the op in front of it if it can.
// Each match and each rejection is reported to the explain log (explain.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "ops/fuse_window.h"
#include "ops/fusion.h"

namespace fuselab {

struct PatternSlot {
  std::string label;  // e.g. "ReLU|GELU|SiLU"
  std::function<bool(const BasicOp&)> accepts;
  bool optional = false;
};

// "fuselab::GELU" -> "GELU"
std::string short_type_name(const std::type_info& type);

template <class... Ops>
PatternSlot slot() {
  std::string label;
  ((label += (label.empty() ? "" : "|") + short_type_name(typeid(Ops))), ...);
  return {label, [](const BasicOp& op) { return ((dynamic_cast<const Ops*>(&op) != nullptr) || ...); }, false};
}

template <class... Ops>
PatternSlot optional_slot() {
  PatternSlot s = slot<Ops...>();
  s.optional = true;
  s.label = "[" + s.label + "]";
  return s;
}

// The ops a pattern matched, and which slot each filled.
struct PatternMatch {
  std::vector<std::shared_ptr<BasicOp>> ops;
  std::vector<int> op_in_slot;  // per slot: index into ops, or -1 for an absent optional slot

  bool has(size_t slot) const { return op_in_slot.at(slot) >= 0; }
  template <class Op>
  Op& get(size_t slot) const {
    return dynamic_cast<Op&>(*ops.at(size_t(op_in_slot.at(slot))));
  }
};

struct PatternPredicate {
  std::string name;
  // Returns why the match is rejected, or "" to accept it.
  std::function<std::string(const PatternMatch&, const FusionFacts&)> reject_reason;
};

struct FusionPattern {
  std::vector<PatternSlot> slots;
  std::vector<PatternPredicate> predicates;
  std::function<std::shared_ptr<FusibleOp>(const OpList& matched)> make;
};

// A fusion function that replaces every accepted match of the pattern with make(matched ops).
FusionFunction fuse_pattern(FusionPattern pattern);

// "Linear Bias [ReLU|GELU|SiLU]"
std::string describe_pattern(const FusionPattern& pattern);

}  // namespace fuselab
