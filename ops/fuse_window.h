// fuse_window: the sliding-window scan most fusion functions are written with.
//
// It walks the list left to right. At each position it shows the matcher a window of up to n
// consecutive *basic* ops (the window stops before any fused op, so a fused op never matches
// again). A match replaces the first `consumed` ops of the window with one fused op and the scan
// continues after them; no match emits the first op and moves on by one. Every step consumes at
// least one op, so the scan always terminates, in time linear in the list length.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "ops/basic_op.h"
#include "ops/fusible_op.h"

namespace fuselab {

using BasicOpWindow = std::vector<std::shared_ptr<BasicOp>>;

struct WindowMatch {
  size_t consumed;                     // ops taken from the start of the window, at least 1
  std::shared_ptr<FusibleOp> fused;    // what replaces them
};

using WindowMatcher = std::function<std::optional<WindowMatch>(const BasicOpWindow& window)>;

OpList fuse_window(const OpList& ops, size_t n, const WindowMatcher& try_fuse);

// The window's first `count` ops as an OpList, for a fused op's constructor.
OpList first_ops(const BasicOpWindow& window, size_t count);

// The op as type Op, or null: fusion patterns match on basic-op types.
template <class Op>
Op* as(const std::shared_ptr<BasicOp>& op) {
  return dynamic_cast<Op*>(op.get());
}

// Replaces every First directly followed by Second with Fused(First, Second): the most common
// shape of a fusion function.
template <class First, class Second, class Fused>
OpList fuse_pairs(const OpList& ops) {
  return fuse_window(ops, 2, [](const BasicOpWindow& w) -> std::optional<WindowMatch> {
    if (w.size() < 2 || !as<First>(w[0]) || !as<Second>(w[1])) return std::nullopt;
    return WindowMatch{2, std::make_shared<Fused>(first_ops(w, 2))};
  });
}

}  // namespace fuselab
