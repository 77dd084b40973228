// Sequential: a list of basic ops run as one fused call.
//
//   Sequential seq({linear, bias, gelu});
//   Tensor y = seq(x);                          // no extra inputs or outputs
//   auto [y, extras] = seq(x, {residual});      // extra inputs in, public extra outputs out
//
// Before a call runs, the fuser rewrites the ops with the registered fusion functions (cached
// until the registry or a fusion fact changes); the call records one node on the tape.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fuser/operation_fuser.h"
#include "ops/basic_op.h"
#include "tensor/safetensors.h"  // NamedTensors

namespace fuselab {

class Sequential {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<BasicOp>> ops);

  // Adds ops at the end; unnamed ops get names such as "linear0", "gelu1".
  Sequential& append(std::shared_ptr<BasicOp> op);
  Sequential& append(const std::vector<std::shared_ptr<BasicOp>>& ops);

  Tensor operator()(const Tensor& x);  // for a Sequential without extra inputs or outputs
  SequentialOutput operator()(const Tensor& x, const std::vector<Tensor>& extra_inputs);

  const std::vector<std::shared_ptr<BasicOp>>& ops() const { return ops_; }
  std::vector<Tensor> parameters() const;
  // Parameters under "<op name>.<parameter name>", e.g. "linear0.weight": checkpoint keys.
  NamedTensors named_parameters() const;
  void zero_grad();

  Sequential& train(bool on = true);
  Sequential& eval() { return train(false); }
  bool training() const { return training_; }
  // Converts every op's parameters in place (BasicOp::to): handles from parameters() taken
  // before, an optimizer's among them, see the converted tensors.
  Sequential& to(Device device);
  Sequential& to(DType dtype);

  // Fusion runs when it is on here and globally (FUSELAB_FUSION=0 turns it off globally).
  Sequential& set_fusion_enabled(bool enabled);
  bool fusion_active() const;
  // One registered fusion on or off for this Sequential only (see also the global switch in
  // registry.h and FUSELAB_DISABLE_FUSIONS).
  Sequential& set_fusion_enabled(const std::string& name, bool enabled);
  // Only the named fusions run here (an empty list: none); enable_all_fusions() undoes it.
  Sequential& enable_only_fusions(const std::vector<std::string>& names);
  Sequential& enable_all_fusions();

  // This Sequential's switches together (fusion on or off, and the fusions switched off by name),
  // so that a tool such as check_fusion can put back exactly what it found.
  struct FusionSwitches {
    bool enabled = true;
    std::set<std::string> disabled;
  };
  FusionSwitches fusion_switches() const { return {fusion_enabled_, disabled_fusions_}; }
  Sequential& set_fusion_switches(const FusionSwitches& switches);

  // The fused lists for the given facts (by default those of the last call, or of the
  // parameters before any call).
  std::shared_ptr<const FusedLists> fused_lists();
  std::shared_ptr<const FusedLists> fused_lists(const FusionFacts& facts);
  // "forward: [...]\nbackward: [...]"
  std::string describe();
  // Per pass, each registered fusion in priority order, where it matched and where a pattern's
  // predicate rejected a match, with the reason (explain.h); then any device fallback a fused op
  // met at run time (FusedOp::note_fallback).
  std::string explain();
  // The same lists as describe(), as a Graphviz DOT graph: a "forward list" cluster and a
  // "backward list" cluster, both in forward op order, one record node per list entry (its type
  // over the basic ops it covers), and a dashed edge from each basic op in the forward list to
  // the backward entry that covers it. Render with `dot -Tsvg`.
  std::string to_dot() const;

 private:
  OperationFuser& fuser();
  // fused_lists() for a const Sequential: the built fuser when there is one, otherwise a
  // throwaway one (no call has run since the ops last changed, so the default facts apply).
  std::shared_ptr<const FusedLists> current_lists() const;
  FusionFacts default_facts() const;

  std::vector<std::shared_ptr<BasicOp>> ops_;
  std::unique_ptr<OperationFuser> fuser_;
  bool training_ = true;
  bool fusion_enabled_ = true;
  std::set<std::string> disabled_fusions_;
};

// Puts a Sequential's fusion switches back as they were when it was made, however the scope
// ends (an exception included): for code that flips them to compare runs.
class RestoreFusionSwitches {
 public:
  explicit RestoreFusionSwitches(Sequential& seq) : seq_(seq), saved_(seq.fusion_switches()) {}
  ~RestoreFusionSwitches() { seq_.set_fusion_switches(saved_); }
  RestoreFusionSwitches(const RestoreFusionSwitches&) = delete;
  RestoreFusionSwitches& operator=(const RestoreFusionSwitches&) = delete;

 private:
  Sequential& seq_;
  Sequential::FusionSwitches saved_;
};

}  // namespace fuselab
