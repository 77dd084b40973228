// Strict parsing of numbers that a user types or a file holds: the whole text must be the number
// and the number must fit the type, so "20x", "1e3" (as an integer), "abc" and "1e400" are
// refused instead of read as 20, 1, 0 and inf.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fuselab {

std::optional<int64_t> parse_int64(std::string_view text);
std::optional<double> parse_double(std::string_view text);  // finite values only

}  // namespace fuselab
