#include "fuser/fusion_switches.h"

#include <algorithm>

#include "fuser/registry.h"

namespace fuselab {

FusionSwitches FusionSwitches::only(const std::vector<std::string>& names) {
  FusionSwitches switches;
  for (const std::string& registered : registered_fusion_names()) {
    if (std::find(names.begin(), names.end(), registered) == names.end()) switches.disabled.insert(registered);
  }
  return switches;
}

FusionSwitches FusionSwitches::with(const std::string& name, bool on) const {
  FusionSwitches copy = *this;
  if (on) copy.disabled.erase(name);
  else copy.disabled.insert(name);
  return copy;
}

}  // namespace fuselab
