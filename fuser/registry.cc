#include "fuser/registry.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "runtime/settings.h"

namespace fuselab {
namespace {

struct Registry {
  std::mutex mutex;
  uint64_t next_id = 1;
  FusionSnapshot state;
  FusionSwitches switches;  // global_switches(): read the settings first
  bool switches_read = false;
  std::atomic<uint64_t> generation{0};  // state.generation, readable without the lock

  void changed() { generation = ++state.generation; }

  std::vector<RegisteredFusion>& list(Pass pass) {
    switch (pass) {
      case Pass::Forward: return state.forward;
      case Pass::Backward: return state.backward;
      case Pass::ForwardBackward: return state.joint;
    }
    return state.forward;
  }
};

Registry& registry() {
  static Registry* instance = new Registry();  // never destroyed: the built-ins register from a static initializer
  return *instance;
}

// The switches of every Sequential, starting from the settings, which are read on the first call
// that needs them (never by the built-ins' registration before main). Called with the lock held.
FusionSwitches& global_switches(Registry& r) {
  if (!r.switches_read) {
    const runtime::Settings& settings = runtime::settings();
    r.switches = FusionSwitches(settings.fusion, settings.disabled_fusions);
    r.switches_read = true;
  }
  return r.switches;
}

// Names are the keys of the switches (per Sequential, global, FUSELAB_DISABLE_FUSIONS), of explain
// and of bisect, shared by every pass: two fusions under one name could not be told apart.
void check_name_is_free(const FusionSnapshot& state, const std::string& name) {
  check(!name.empty(), "register fusion: the name is empty; fusions are switched on and off by name");
  for (const auto* fusions : {&state.joint, &state.forward, &state.backward}) {
    for (const RegisteredFusion& f : *fusions) {
      check(f.name != name, "register fusion '", name, "': a fusion of that name is already registered;",
            " unregister it first (FusionHandle::unregister) or pick another name");
    }
  }
}

FusionHandle add(Pass pass, std::string name, FusionFunction fn, bool prepend) {
  check(static_cast<bool>(fn), "register fusion '", name, "': the fusion function is empty");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  check_name_is_free(r.state, name);
  auto& fusions = r.list(pass);
  const uint64_t id = r.next_id++;
  fusions.insert(prepend ? fusions.begin() : fusions.end(), RegisteredFusion{id, std::move(name), std::move(fn)});
  r.changed();
  return FusionHandle(id);
}

}  // namespace

void FusionHandle::unregister() {
  if (id_ == 0) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto* fusions : {&r.state.forward, &r.state.backward, &r.state.joint}) {
    fusions->erase(std::remove_if(fusions->begin(), fusions->end(),
                                  [&](const RegisteredFusion& f) { return f.id == id_; }),
                   fusions->end());
  }
  r.changed();
  id_ = 0;
}

FusionHandle register_forward_fusion(std::string name, FusionFunction fn, bool prepend) {
  return add(Pass::Forward, std::move(name), std::move(fn), prepend);
}

FusionHandle register_backward_fusion(std::string name, FusionFunction fn, bool prepend) {
  return add(Pass::Backward, std::move(name), std::move(fn), prepend);
}

FusionHandle register_forward_backward_fusion(std::string name, FusionFunction fn, bool prepend) {
  return add(Pass::ForwardBackward, std::move(name), std::move(fn), prepend);
}

FusionSnapshot fusion_snapshot() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  FusionSnapshot snapshot = r.state;
  snapshot.disabled = global_switches(r).disabled;
  return snapshot;
}

uint64_t fusion_registry_generation() { return registry().generation.load(); }

FusionSwitches global_fusion_switches() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return global_switches(r);
}

bool global_fusion_enabled() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return global_switches(r).enabled;
}

void set_global_fusion_switches(const FusionSwitches& switches) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  global_switches(r) = switches;
  r.changed();
}

std::vector<std::string> registered_fusion_names() {
  const FusionSnapshot snapshot = fusion_snapshot();
  std::vector<std::string> names;
  for (const auto* list : {&snapshot.joint, &snapshot.forward, &snapshot.backward}) {
    for (const RegisteredFusion& f : *list) names.push_back(f.name);
  }
  return names;
}

}  // namespace fuselab
