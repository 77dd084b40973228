// What a pattern matcher reports while a fusion function runs: each match and each rejection
// with its reason. The fuser's explain log (fuser/explain.h) collects these per fusion.
#pragma once

#include <string>
#include <vector>

namespace fuselab {

struct FusionEvent {
  enum class Kind { Matched, Rejected };
  Kind kind;
  std::string where;   // the matched ops, e.g. "linear0, bias0, gelu0"
  std::string detail;  // the fused op, or the predicate and its reason
};

struct FusionStepLog {
  std::string fusion;  // the registered name
  bool disabled = false;
  std::vector<FusionEvent> events;
};

// While a fusion function runs, pattern matchers report to the current step (if any is being
// recorded on this thread).
FusionStepLog* current_fusion_step();
class FusionStepScope {
 public:
  explicit FusionStepScope(FusionStepLog* step);
  ~FusionStepScope();
  FusionStepScope(const FusionStepScope&) = delete;
  FusionStepScope& operator=(const FusionStepScope&) = delete;

 private:
  FusionStepLog* previous_;
};

}  // namespace fuselab
