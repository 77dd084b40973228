// fuselab::Error (runtime/error.h), the one exception type for user mistakes, and helpers that
// build its message.
#pragma once

#include <sstream>
#include <string>

#include "runtime/error.h"
#include "tensor/shape.h"  // operator<< for shapes in messages

namespace fuselab {

// Throws Error whose message is the parts streamed one after another.
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream message;
  (message << ... << parts);
  throw Error(message.str());
}

// The parts are only formatted when the check fails.
template <class... Parts>
void check(bool ok, const Parts&... parts) {
  if (!ok) fail(parts...);
}

}  // namespace fuselab
