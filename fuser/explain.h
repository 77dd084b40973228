// The explain log: what each fusion function did while a Sequential's lists were fused. For each
// pass, each registered fusion in priority order, where it matched and where a pattern started to
// match but a predicate rejected it, with the reason.
//
//   std::cout << seq.explain();
//   FUSELAB_FUSION_LOG=1 prints the same to stderr whenever a Sequential fuses.
#pragma once

#include <string>
#include <vector>

#include "ops/fusion_trace.h"

namespace fuselab {

struct PassLog {
  std::string pass;  // "joint", "forward", "backward"
  std::vector<FusionStepLog> steps;
};

struct ExplainLog {
  std::vector<PassLog> passes;
  std::string str() const;
};

}  // namespace fuselab
