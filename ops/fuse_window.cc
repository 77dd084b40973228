#include "ops/fuse_window.h"

#include <string>

namespace fuselab {

OpList first_ops(const BasicOpWindow& window, size_t count) { return OpList(window.begin(), window.begin() + count); }

OpList fuse_window(const OpList& ops, size_t n, const WindowMatcher& try_fuse) {
  OpList result;
  result.reserve(ops.size());
  BasicOpWindow window;
  window.reserve(n);
  size_t i = 0;
  while (i < ops.size()) {
    window.clear();
    for (size_t j = i; j < ops.size() && window.size() < n && !ops[j]->is_fused(); ++j) {
      window.push_back(std::static_pointer_cast<BasicOp>(ops[j]));
    }
    std::optional<WindowMatch> match;
    if (!window.empty()) match = try_fuse(window);
    if (match) {
      check(match->consumed >= 1 && match->consumed <= window.size() && match->fused != nullptr,
            "fuse_window: a match must consume between 1 and ", window.size(), " ops and give a fused op, got ",
            match->consumed);
      result.push_back(match->fused);
      i += match->consumed;
    } else {
      result.push_back(ops[i]);
      ++i;
    }
  }
  return result;
}

}  // namespace fuselab
