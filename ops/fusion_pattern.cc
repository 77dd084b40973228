#include "ops/fusion_pattern.h"

#include <cxxabi.h>

#include <cstdlib>

#include "ops/fusion_trace.h"

namespace fuselab {

std::string short_type_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : type.name();
  std::free(demangled);
  const size_t colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

std::string describe_pattern(const FusionPattern& pattern) {
  std::string text;
  for (const PatternSlot& s : pattern.slots) text += (text.empty() ? "" : " ") + s.label;
  return text;
}

namespace {

// Greedy match of the slots against the start of the window; nullopt when a required slot fails.
std::optional<PatternMatch> match_slots(const std::vector<PatternSlot>& slots, const BasicOpWindow& window) {
  PatternMatch match;
  size_t next = 0;
  for (const PatternSlot& s : slots) {
    if (next < window.size() && s.accepts(*window[next])) {
      match.op_in_slot.push_back(int(match.ops.size()));
      match.ops.push_back(window[next++]);
    } else if (s.optional) {
      match.op_in_slot.push_back(-1);
    } else {
      return std::nullopt;
    }
  }
  return match;
}

std::string names(const std::vector<std::shared_ptr<BasicOp>>& ops) {
  std::string text;
  for (const auto& op : ops) text += (text.empty() ? "" : ", ") + op->name();
  return text;
}

}  // namespace

FusionFunction fuse_pattern(FusionPattern pattern) {
  check(!pattern.slots.empty() && pattern.make, "fuse_pattern: a pattern needs slots and a factory");
  bool any_required = false;
  for (const PatternSlot& s : pattern.slots) any_required |= !s.optional;
  check(any_required, "fuse_pattern: ", describe_pattern(pattern), " has no required slot, so it would match nothing");
  return [pattern](OpList ops, const FusionFacts& facts) {
    return fuse_window(ops, pattern.slots.size(), [&](const BasicOpWindow& window) -> std::optional<WindowMatch> {
      std::optional<PatternMatch> match = match_slots(pattern.slots, window);
      if (!match || match->ops.empty()) return std::nullopt;
      FusionStepLog* log = current_fusion_step();
      for (const PatternPredicate& predicate : pattern.predicates) {
        const std::string reason = predicate.reject_reason(*match, facts);
        if (reason.empty()) continue;
        if (log) log->events.push_back({FusionEvent::Kind::Rejected, names(match->ops), predicate.name + ": " + reason});
        return std::nullopt;
      }
      auto fused = pattern.make(OpList(match->ops.begin(), match->ops.end()));
      if (log) log->events.push_back({FusionEvent::Kind::Matched, names(match->ops), fused->describe()});
      return WindowMatch{match->ops.size(), fused};
    });
  };
}

}  // namespace fuselab
