// A minimal command-line flag reader for the examples: --name=value, --name value, or --name
// for booleans. Unknown flags are an error listing the known ones.
#pragma once

#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "tensor/error.h"

namespace fuselab::examples {

class Flags {
 public:
  Flags(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      check(arg.rfind("--", 0) == 0, "unexpected argument '", arg, "' (flags look like --name=value)");
      arg = arg.substr(2);
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        values_[arg.substr(0, eq)] = arg.substr(eq + 1);
      } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
        values_[arg] = argv[++i];
      } else {
        values_[arg] = "true";
      }
    }
  }

  std::string get(const std::string& name, const std::string& fallback) { return lookup(name).value_or(fallback); }
  long long get_int(const std::string& name, long long fallback) {
    auto v = lookup(name);
    return v ? std::stoll(*v) : fallback;
  }
  double get_double(const std::string& name, double fallback) {
    auto v = lookup(name);
    return v ? std::stod(*v) : fallback;
  }
  bool get_bool(const std::string& name) {
    auto v = lookup(name);
    return v && *v != "false" && *v != "0";
  }

  // Throws if a flag was given that no get*() asked for.
  void check_all_known() const {
    std::string known;
    for (const auto& name : asked_) known += " --" + name;
    for (const auto& [name, value] : values_) check(asked_.count(name), "unknown flag --", name, "; known:", known);
  }

 private:
  std::optional<std::string> lookup(const std::string& name) {
    asked_.insert(name);
    auto it = values_.find(name);
    return it == values_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  std::map<std::string, std::string> values_;
  std::set<std::string> asked_;
};

}  // namespace fuselab::examples
