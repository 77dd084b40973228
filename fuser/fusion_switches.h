// Which fusions may run, as one value: fusion on or off as a whole, and registered fusions switched
// off by name. Every switch is this value: the global one (which starts from FUSELAB_FUSION and
// FUSELAB_DISABLE_FUSIONS, registry.h), each Sequential's (Sequential::set_fusion_switches), and a
// scope's (FusionSwitchesScope, sequential.h). A fusion fires in a Sequential when both its switches
// and the global ones allow it.
//
//   seq.set_fusion_switches(false);                                  // nothing fuses
//   seq.set_fusion_switches(FusionSwitches::only({"FlashAttention"}));
//   seq.set_fusion_switches(seq.fusion_switches().with("ForwardAddNorm", false));
#pragma once

#include <set>
#include <string>
#include <vector>

namespace fuselab {

struct FusionSwitches {
  bool enabled = true;
  std::set<std::string> disabled;

  FusionSwitches() = default;
  FusionSwitches(bool enabled) : enabled(enabled) {}  // NOLINT: `false` reads as "no fusion"
  FusionSwitches(bool enabled, std::set<std::string> disabled) : enabled(enabled), disabled(std::move(disabled)) {}

  // On, with every fusion registered now switched off except `names`.
  static FusionSwitches only(const std::vector<std::string>& names);
  // A copy with one fusion switched on or off by name.
  FusionSwitches with(const std::string& name, bool on) const;
  bool allows(const std::string& name) const { return enabled && !disabled.count(name); }
  bool operator==(const FusionSwitches& other) const { return enabled == other.enabled && disabled == other.disabled; }
};

}  // namespace fuselab
