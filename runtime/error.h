// fuselab::Error, the one exception type for user mistakes: a bad shape, dtype, device or setting,
// a malformed file. It sits below every other layer so that the settings parser and the kernels'
// callers throw the same type; tensor/error.h adds the helpers that build its message.
#pragma once

#include <stdexcept>

namespace fuselab {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fuselab
