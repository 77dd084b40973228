// The fusion registry: ordered, process-wide lists of fusion functions for the forward pass, the
// backward pass and the joint (forward-backward) pass. Built-in fusions are registered through
// these same calls (builtin_fusions.cc). Thread-safe; every change bumps a generation number,
// which invalidates every Sequential's cached fused lists.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "fuser/fusion_switches.h"
#include "ops/fusion.h"

namespace fuselab {

struct RegisteredFusion {
  uint64_t id;
  std::string name;
  FusionFunction fn;
};

// Identifies one registration; unregister() removes it (a no-op the second time).
class FusionHandle {
 public:
  FusionHandle() = default;
  explicit FusionHandle(uint64_t id) : id_(id) {}
  void unregister();
  uint64_t id() const { return id_; }

 private:
  uint64_t id_ = 0;
};

// Unregisters its fusion when it goes out of scope (handy in tests).
class ScopedFusion {
 public:
  explicit ScopedFusion(FusionHandle handle) : handle_(handle) {}
  ~ScopedFusion() { handle_.unregister(); }
  ScopedFusion(const ScopedFusion&) = delete;
  ScopedFusion& operator=(const ScopedFusion&) = delete;

 private:
  FusionHandle handle_;
};

// Appends (or, with prepend, puts first: the last prepended runs first) a fusion function. The
// name must be non-empty and unique over all three passes while registered (it keys the switches
// below); unregistering frees it, so replacing a fusion is unregister, then register.
FusionHandle register_forward_fusion(std::string name, FusionFunction fn, bool prepend = false);
FusionHandle register_backward_fusion(std::string name, FusionFunction fn, bool prepend = false);
// Joint fusions run first, and their fused ops appear in both lists (as the same object): such an
// op implements both passes and may save less in forward and recompute in backward.
FusionHandle register_forward_backward_fusion(std::string name, FusionFunction fn, bool prepend = false);

struct FusionSnapshot {
  uint64_t generation = 0;
  std::vector<RegisteredFusion> joint, forward, backward;  // each in priority order
  std::set<std::string> disabled;  // names switched off for every Sequential
};
FusionSnapshot fusion_snapshot();
// The generation alone, without copying the lists: cheap enough to check on every call.
uint64_t fusion_registry_generation();

// The switches of every Sequential (fusion_switches.h): FUSELAB_FUSION and FUSELAB_DISABLE_FUSIONS
// until set. A change re-fuses every Sequential on its next call.
FusionSwitches global_fusion_switches();
void set_global_fusion_switches(const FusionSwitches& switches);
// global_fusion_switches().enabled without copying the names: read on every Sequential call.
bool global_fusion_enabled();

// The registered names of every pass, in priority order (joint, forward, backward).
std::vector<std::string> registered_fusion_names();

}  // namespace fuselab
