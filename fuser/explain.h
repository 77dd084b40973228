// The explain log: what each fusion function did while a Sequential's lists were fused. For each
// pass, each registered fusion in priority order, where it matched and where a pattern started to
// match but a predicate rejected it, with the reason.
//
//   std::cout << seq.explain();
//   FUSELAB_FUSION_LOG=1 prints the same to stderr whenever a Sequential fuses.
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

struct PassLog {
  std::string pass;  // "joint", "forward", "backward"
  std::vector<FusionStepLog> steps;
};

struct ExplainLog {
  std::vector<PassLog> passes;
  std::string str() const;
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
