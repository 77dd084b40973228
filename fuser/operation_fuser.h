// OperationFuser: rewrites a Sequential's basic ops (all of them, or one group between Modules)
// into a forward list and a backward list with the registered fusion functions, checks every
// rewrite, caches the lists, and runs a call as one tape node whose backward walks the backward
// list in reverse.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "autograd/tape.h"
#include "fuser/channel_plan.h"
#include "fuser/explain.h"
#include "fuser/registry.h"
#include "ops/basic_op.h"

namespace fuselab {

// A fused list and, for each entry, the indices of the basic ops it covers.
struct IndexedOpList {
  OpList ops;
  std::vector<std::vector<size_t>> covers;
};

struct FusedLists {
  IndexedOpList forward, backward;  // both in forward order
};

struct SequentialOutput {
  Tensor output;
  std::vector<Tensor> extra_outputs;  // the public ones, in op order
};

class OperationFuser {
 public:
  // Throws on channel binding errors; once built, it locks the ops' channel bindings.
  explicit OperationFuser(std::vector<std::shared_ptr<BasicOp>> ops);

  // The fused lists for these facts: the basic ops unchanged when fusion is off.
  std::shared_ptr<const FusedLists> lists(const FusionFacts& facts, bool fuse);

  // `call_args`, when not empty, holds one entry per op: its arguments for this call, or null.
  SequentialOutput run(const Tensor& input, const std::vector<Tensor>& extra_inputs, bool training, bool fuse,
                       const std::vector<std::shared_ptr<const CallArgs>>& call_args = {});

  const ChannelPlan& plan() const { return program_->plan; }
  // The facts of the last run, if any ran.
  std::optional<FusionFacts> last_facts();
  // What each op's context holds for the last call recorded for backward, by op (an empty summary
  // where it saved nothing), read while that call's graph is alive (its output is held, backward
  // has not run); empty otherwise. Only a weak handle is kept: no saved tensor outlives its call,
  // and a training call does no work for it.
  std::vector<std::optional<SavedSummary>> last_saved();

  // What every fusion function did for these facts (fusing afresh, without the cache).
  ExplainLog explain(const FusionFacts& facts) const;
  // Fusions switched off for this fuser only, by registered name.
  void set_disabled_fusions(std::set<std::string> names);

 private:
  // The ops and their channel plan; shared with pending backward calls, which may outlive us.
  struct Program {
    std::vector<std::shared_ptr<BasicOp>> ops;
    ChannelPlan plan;
  };
  struct CallState;
  static Tensor run_forward(CallState& state, const Tensor& input, const std::vector<Tensor>& extra_inputs,
                            std::vector<std::vector<Tensor>>& extra_values);
  // Frees each op's saved state once used, unless retain_graph (another backward will follow).
  static std::vector<Tensor> backward(CallState& state, const std::vector<Tensor>& grads, const EmitGrad& emit,
                                      bool retain_graph);
  FusedLists fuse_lists(const FusionFacts& facts, ExplainLog* log) const;
  IndexedOpList check_cover(const OpList& ops, const std::string& fusion, Pass pass) const;

  std::shared_ptr<const Program> program_;

  // Fused lists by facts, for the current registry generation (e.g. one entry for training with
  // grad and one for evaluation under NoGradGuard).
  struct CacheEntry {
    FusionFacts facts;
    bool fuse;
    std::shared_ptr<const FusedLists> lists;
  };
  std::mutex cache_mutex_;
  uint64_t cache_generation_ = 0;
  std::vector<CacheEntry> cache_;
  std::optional<FusionFacts> last_facts_;
  std::weak_ptr<CallState> last_call_;
  std::set<std::string> disabled_;
};

// "[ForwardLinearBiasActivation(linear0, bias0, gelu0), RMSNorm(rmsnorm0)]"
std::string describe_list(const OpList& ops);

}  // namespace fuselab
