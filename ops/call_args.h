// CallArgs: per-call arguments for one basic op, as TransformerEngine's op_kwargs. A Sequential
// call hands them to the op's context (OpContext::call_args), where the op's forward, or a fused
// op covering it, reads them: a Dropout seed for this call only, say.
//
//   seq(x, {}, {{dropout, {{"seed", 7}}}});
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>

#include "tensor/tensor.h"

namespace fuselab {

using CallArg = std::variant<int64_t, double, Tensor>;
using CallArgs = std::map<std::string, CallArg>;

// The argument under `key` as a T, or nullptr when the call gave none; throws naming `op` and the
// key when it holds another type.
template <class T>
const T* find_call_arg(const CallArgs* args, const std::string& key, const std::string& op) {
  if (!args) return nullptr;
  const auto it = args->find(key);
  if (it == args->end()) return nullptr;
  const T* value = std::get_if<T>(&it->second);
  check(value != nullptr, op, ": per-call argument '", key, "' must be ",
        std::is_same_v<T, int64_t> ? "an integer" : std::is_same_v<T, double> ? "a double" : "a Tensor");
  return value;
}

}  // namespace fuselab
