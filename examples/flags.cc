#include "examples/flags.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <sstream>

#include "tensor/parse_number.h"

namespace fuselab::examples {
namespace {

template <class T>
std::string str(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

template <class T>
std::string bracketed(Range<T> range) {
  return "[" + str(range.min) + ", " + str(range.max) + "]";
}

// CLI11 reads each value as text; the number in it is read here, all of it or nothing, so that
// "20x" and "1e3" are not integers and "inf" is not a finite number.
template <class T, class Parse>
std::function<void(const std::string&)> number_reader(const std::string& name, T& value, Range<T> range, Parse parse,
                                                      const char* kind) {
  return [name, &value, range, parse, kind](const std::string& text) {
    const std::optional<T> number = parse(text);
    check(number.has_value(), "--", name, ": '", text, "' is not ", kind);
    check_in_range(name, *number, range, text);
    value = *number;
  };
}

}  // namespace

Flags::Flags(const std::string& program, const std::string& description)
    : app_(std::make_unique<CLI::App>(description, program)) {
  app_->allow_extras();  // parse() names the first unknown flag in its own words
  app_->set_help_flag("-h,--help", "print this help and exit");
  app_->get_formatter()->column_width(34);
}

Flags::~Flags() = default;

void Flags::declare(Flag flag, bool is_switch, const std::string& default_text, const std::string& range_text) {
  flags_.push_back(std::make_unique<Flag>(std::move(flag)));
  Flag& f = *flags_.back();
  CLI::Option* option =
      is_switch ? app_->add_flag("--" + f.name, f.text, f.help) : app_->add_option("--" + f.name, f.text, f.help);
  option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a later --name overrides an earlier one
  if (!is_switch) option->type_name(f.type);
  show(f.name, default_text, range_text);
}

void Flags::add(const std::string& name, int64_t& value, const std::string& help, Range<int64_t> range) {
  declare({name, "", "INT", help, number_reader(name, value, range, parse_int64, "an integer")}, false, str(value),
          bracketed(range));
}

void Flags::add(const std::string& name, double& value, const std::string& help, Range<double> range) {
  declare({name, "", "FLOAT", help, number_reader(name, value, range, parse_double, "a finite number")}, false,
          str(value), bracketed(range));
}

void Flags::add(const std::string& name, std::string& value, const std::string& help) {
  declare({name, "", "TEXT", help, [&value](const std::string& text) { value = text; }}, false, "\"" + value + "\"", "");
}

void Flags::add(const std::string& name, bool& value, const std::string& help) {
  // CLI11 gives "true" for a bare --name and the text itself for --name=text.
  const auto read = [name, &value](const std::string& text) {
    check(text == "true" || text == "false" || text == "1" || text == "0", "--", name, ": '", text,
          "' is not true, false, 1 or 0");
    value = text == "true" || text == "1";
  };
  declare({name, "", "", help, read}, true, value ? "true" : "false", "");
}

void Flags::show(const std::string& name, const std::string& default_text, const std::string& range_text) {
  // The help line reads "--name TYPE [default]  help, in [min, max]".
  for (auto& flag : flags_) {
    if (flag->name != name) continue;
    CLI::Option* option = app_->get_option("--" + name);
    option->option_text((flag->type.empty() ? "" : flag->type + " ") + "[" + default_text + "]");
    option->description(flag->help + (range_text.empty() ? "" : ", in " + range_text));
  }
}

bool Flags::parse(int argc, char** argv) {
  // CLI11 reads "--name=" as "--name" and takes the next argument for its value; it is the empty
  // value, given as its own argument.
  std::vector<std::string> args(argv, argv + argc);
  std::vector<char*> split;
  static char empty[] = "";
  for (std::string& arg : args) {
    const bool empty_value = arg.rfind("--", 0) == 0 && arg.size() > 3 && arg.back() == '=';
    if (empty_value) arg.pop_back();
    split.push_back(arg.data());
    if (empty_value) split.push_back(empty);
  }
  try {
    app_->parse(int(split.size()), split.data());
  } catch (const CLI::CallForHelp&) {
    std::cout << app_->help();
    return false;
  } catch (const CLI::ParseError& e) {
    fail(e.what());  // e.g. "--steps: 1 required INT missing"
  }
  const std::vector<std::string> extras = app_->remaining();
  if (!extras.empty()) {
    const std::string& arg = extras.front();
    check(arg.rfind("-", 0) == 0, "unexpected argument '", arg, "' (flags look like --name=value)");
    std::string known;
    for (const auto& flag : flags_) known += " --" + flag->name;
    fail("unknown flag ", arg.substr(0, arg.find('=')), "; known:", known, " (see --help)");
  }
  for (const auto& flag : flags_) {
    if (given(flag->name)) flag->read(flag->text);
  }
  return true;
}

bool Flags::given(const std::string& name) const { return app_->count("--" + name) > 0; }

DType floating_dtype_flag(const std::string& name, const std::string& text) {
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16}) {
    if (text == dtype_name(dtype)) return dtype;
  }
  fail("--", name, ": ", text, " is not a floating dtype: float32, float64 or bfloat16");
}

}  // namespace fuselab::examples
