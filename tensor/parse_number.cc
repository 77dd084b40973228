#include "tensor/parse_number.h"

#include <charconv>
#include <cmath>

namespace fuselab {
namespace {

// from_chars parses a prefix; the number is valid only if it used every character.
template <class T>
std::optional<T> parse_whole(std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end) return std::nullopt;
  return value;
}

}  // namespace

std::optional<int64_t> parse_int64(std::string_view text) { return parse_whole<int64_t>(text); }

std::optional<double> parse_double(std::string_view text) {
  const auto value = parse_whole<double>(text);
  if (!value || !std::isfinite(*value)) return std::nullopt;
  return value;
}

}  // namespace fuselab
