// Command-line flags for the examples and tools: CLI11 declares them, writes --help and finds
// unknown flags; FuseLab reads the values strictly (the whole text, through tensor/parse_number.h,
// then the flag's range), so every bad value is a fuselab::Error naming the flag and the value.
// Accepted: --name=value, --name value, and a bare --name for switches.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/error.h"

namespace CLI {
class App;
}

namespace fuselab::examples {

// The values a numeric flag accepts, both ends included.
template <class T>
struct Range {
  T min = std::numeric_limits<T>::lowest(), max = std::numeric_limits<T>::max();
};

// Throws "--name: <shown> is outside [min, max]"; shown defaults to the value itself.
template <class T>
void check_in_range(const std::string& name, T value, Range<T> range, const std::string& shown = "") {
  if (value >= range.min && value <= range.max) return;
  if (shown.empty()) fail("--", name, ": ", value, " is outside [", range.min, ", ", range.max, "]");
  fail("--", name, ": ", shown, " is outside [", range.min, ", ", range.max, "]");
}

// The floating dtype a flag names: float32, float64 or bfloat16; anything else throws naming --name.
DType floating_dtype_flag(const std::string& name, const std::string& text);

class Flags {
 public:
  Flags(const std::string& program, const std::string& description);
  ~Flags();

  // Each add() declares --name; the variable's value now is the default that --help shows, and
  // parse() overwrites it when the flag is given.
  void add(const std::string& name, int64_t& value, const std::string& help, Range<int64_t> range);
  void add(const std::string& name, double& value, const std::string& help, Range<double> range);
  void add(const std::string& name, std::string& value, const std::string& help);
  // A switch: a bare --name turns it on; --name=true|false|1|0 sets it.
  void add(const std::string& name, bool& value, const std::string& help);

  // What --help shows as the default and the range of --name, for ones that depend on other flags.
  void show(const std::string& name, const std::string& default_text, const std::string& range_text);

  // Reads the command line into the variables. Returns false when --help was asked for: the help
  // is printed to stdout, and the program should exit with 0. Throws Error for an unknown flag,
  // a stray argument, a missing value or a value that is not of the flag's type or range.
  bool parse(int argc, char** argv);

  // Whether --name was on the command line.
  bool given(const std::string& name) const;

 private:
  struct Flag {
    std::string name, text, type, help;  // text: what CLI11 read; type: INT, FLOAT, TEXT or "" (a switch)
    std::function<void(const std::string&)> read;  // converts text into the variable
  };
  void declare(Flag flag, bool is_switch, const std::string& default_text, const std::string& range_text);

  std::unique_ptr<CLI::App> app_;
  std::vector<std::unique_ptr<Flag>> flags_;  // owned here: CLI11 writes into each text
};

}  // namespace fuselab::examples
