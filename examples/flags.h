// A minimal command-line flag reader for the examples: --name=value, --name value, or --name
// for booleans. Unknown flags are an error listing the known ones. Numbers are read strictly
// (the whole value, in the flag's range), and every error names the flag and the value.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "tensor/error.h"
#include "tensor/parse_number.h"

namespace fuselab::examples {

// The values a numeric flag accepts, both ends included.
template <class T>
struct Range {
  T min = std::numeric_limits<T>::lowest(), max = std::numeric_limits<T>::max();
};

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
  int64_t get_int(const std::string& name, int64_t fallback, Range<int64_t> range = {}) {
    return get_number(name, fallback, range, parse_int64, "an integer");
  }
  double get_double(const std::string& name, double fallback, Range<double> range = {}) {
    return get_number(name, fallback, range, parse_double, "a finite number");
  }
  bool get_bool(const std::string& name) {
    const auto v = lookup(name);
    if (!v) return false;
    check(*v == "true" || *v == "false" || *v == "1" || *v == "0", "--", name, ": '", *v,
          "' is not true, false, 1 or 0");
    return *v == "true" || *v == "1";
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

  template <class T, class Parse>
  T get_number(const std::string& name, T fallback, Range<T> range, Parse parse, const char* kind) {
    const auto text = lookup(name);
    if (!text) return fallback;
    const std::optional<T> value = parse(*text);
    check(value.has_value(), "--", name, ": '", *text, "' is not ", kind);
    check(*value >= range.min && *value <= range.max, "--", name, ": ", *text, " is outside [", range.min, ", ",
          range.max, "]");
    return *value;
  }

  std::map<std::string, std::string> values_;
  std::set<std::string> asked_;
};

}  // namespace fuselab::examples
