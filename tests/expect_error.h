// The check every bad-input test makes: the call throws fuselab::Error, and its message names
// what went wrong (the op, the shapes, the file...).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace fuselab::testing {

// Expects call() to throw Error whose message contains every one of `words`.
void expect_error(const std::function<void()>& call, const std::vector<std::string>& words);

}  // namespace fuselab::testing
