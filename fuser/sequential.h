// Sequential: a list of basic ops run as one fused call, with the container API of
// torch.nn.Sequential and TransformerEngine's te.ops.Sequential.
//
//   Sequential seq({linear, bias, gelu});        // or named: Sequential({{"fc", linear}, ...})
//   Tensor y = seq(x);                           // no extra inputs or outputs
//   auto [y, extras] = seq(x, {residual});       // extra inputs in, public extra outputs out
//   seq(x, {}, {{dropout, {{"seed", 7}}}});      // per-call arguments for one op
//
// Before a call runs, the fuser rewrites the ops with the registered fusion functions (cached
// until the registry, a fusion fact or the list changes); the call records one node on the tape.
//
// Entries may also be Modules (module.h), steps the fuser does not see. They split the list into
// groups: each run of consecutive basic ops fuses on its own and records its own tape node, and
// each Module runs between them. The call's extra inputs go to the groups' unbound slots in op
// order and their public extra outputs come back in op order, but a channel may not cross a
// Module (an Error): pass such a tensor out as an extra output and back in as an extra input.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fuser/module.h"
#include "fuser/fusion_switches.h"
#include "fuser/operation_fuser.h"
#include "ops/basic_op.h"
#include "ops/call_args.h"
#include "tensor/safetensors.h"  // NamedTensors

namespace fuselab {

// One entry of a Sequential: a basic op, which the fuser sees, or a Module, which it does not.
struct SequentialEntry {
  template <class Op, std::enable_if_t<std::is_base_of_v<BasicOp, Op>, int> = 0>
  SequentialEntry(std::shared_ptr<Op> basic) : op(std::move(basic)) {}
  template <class M, std::enable_if_t<std::is_base_of_v<Module, M>, int> = 0>
  SequentialEntry(std::shared_ptr<M> step) : module(std::move(step)) {}
  SequentialEntry(std::shared_ptr<Sequential> nested);  // a nested Sequential, as a Module

  const std::string& name() const { return op ? op->name() : module->name(); }
  std::string describe() const { return op ? op->describe() : module->describe(); }

  std::shared_ptr<BasicOp> op;      // set for a basic op
  std::shared_ptr<Module> module;   // set for a Module
};

// Per-call arguments for one basic op of a Sequential, named by the op or by its entry index
// (negative from the end).
struct OpCallArgs {
  struct Target {
    template <class Op, std::enable_if_t<std::is_base_of_v<BasicOp, Op>, int> = 0>
    Target(std::shared_ptr<Op> basic) : op(std::move(basic)), by_op(true) {}
    Target(int64_t entry_index) : index(entry_index) {}
    std::shared_ptr<BasicOp> op;
    int64_t index = 0;
    bool by_op = false;  // named by an op (which must not be null), not by an index
  };
  Target target;
  CallArgs args;
};

class Sequential {
 public:
  using Entry = SequentialEntry;

  Sequential() = default;
  Sequential(std::initializer_list<Entry> entries);
  explicit Sequential(const std::vector<std::shared_ptr<BasicOp>>& ops);
  // Entries under the given names (checkpoint keys start with them); a duplicate is an Error.
  explicit Sequential(const std::vector<std::pair<std::string, Entry>>& named);

  // Adding entries: unnamed ones get names such as "linear0", "gelu1"; an entry that is already
  // in the list, or a name that is, is an Error. Every change rebuilds the fused lists.
  Sequential& append(Entry entry);
  Sequential& append(const std::vector<std::shared_ptr<BasicOp>>& ops);
  Sequential& extend(std::initializer_list<Entry> entries);
  Sequential& extend(const std::vector<std::shared_ptr<BasicOp>>& ops);
  Sequential& extend(const Sequential& other);  // other's entries, shared
  Sequential& insert(int64_t index, Entry entry);  // before entry `index`; size() appends
  Entry pop(int64_t index = -1);

  // Entry access; a negative index counts from the end, one out of range is an Error.
  size_t size() const { return entries_.size(); }
  const Entry& operator[](int64_t index) const;
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }
  // A new Sequential of entries [begin, end) (negative from the end), sharing the same ops and
  // Modules, hence parameters, with this one's training mode and fusion switches.
  Sequential slice(int64_t begin, int64_t end) const;

  Tensor operator()(const Tensor& x);  // for a Sequential without extra inputs or outputs
  SequentialOutput operator()(const Tensor& x, const std::vector<Tensor>& extra_inputs);
  // Each target must be a basic op of this Sequential (not one inside a nested Sequential) that
  // takes per-call arguments (BasicOp::call_arg_keys). A fused op covering it reads the same
  // arguments from the op's context, so fusion goes on as usual.
  SequentialOutput operator()(const Tensor& x, const std::vector<Tensor>& extra_inputs,
                              const std::vector<OpCallArgs>& op_args);

  // The basic ops, in order, across groups (those inside nested Sequentials are not among them).
  std::vector<std::shared_ptr<BasicOp>> ops() const;
  // Fusible groups and Modules, in order: [op, op, module, op] has three.
  size_t num_groups() const { return groups().size(); }
  std::vector<Tensor> parameters() const;
  // Parameters under "<op name>.<parameter name>", e.g. "linear0.weight": checkpoint keys
  // (a Module's under its name, e.g. "block.linear0.weight").
  NamedTensors named_parameters() const;
  void zero_grad();

  Sequential& train(bool on = true);  // nested Sequentials too
  Sequential& eval() { return train(false); }
  bool training() const { return training_; }
  // Converts every op's parameters in place (BasicOp::to): handles from parameters() taken
  // before, an optimizer's among them, see the converted tensors.
  Sequential& to(Device device);
  Sequential& to(DType dtype);

  // Which fusions may fire here (fusion_switches.h); a fusion fires when these switches and the
  // global ones (registry.h) both allow it. set_fusion_switches(false) runs the ops unfused.
  const FusionSwitches& fusion_switches() const { return switches_; }
  Sequential& set_fusion_switches(const FusionSwitches& switches);
  bool fusion_active() const;

  // The fused lists for the given facts (by default those of the last call, or of the
  // parameters before any call); with Modules, the groups' lists one after another, indexed
  // into ops().
  std::shared_ptr<const FusedLists> fused_lists();
  std::shared_ptr<const FusedLists> fused_lists(const FusionFacts& facts);
  // Per basic op (as ops()), what its context holds for the last call that recorded for backward,
  // while that call's graph is alive (an empty summary where it saved nothing); none for an op
  // whose group has no such call alive.
  std::vector<std::optional<SavedSummary>> last_saved();
  // "forward: [...]\nbackward: [...]", Modules in place.
  std::string describe();
  // Per pass, each registered fusion in priority order, where it matched and where a pattern's
  // predicate rejected a match, with the reason (explain.h); then any device fallback a fused op
  // met at run time (FusedOp::note_fallback). With fusion off, a first line says so: the matches
  // are then what fusion would do.
  std::string explain();
  // The same lists as a Graphviz picture: to_dot(seq) in fusion_picture.h.

 private:
  // A run of consecutive basic ops with its fuser, or one Module.
  struct Group {
    std::shared_ptr<Module> module;
    std::vector<std::shared_ptr<BasicOp>> ops;
    std::unique_ptr<OperationFuser> fuser;
  };
  // Built on first use from the entries, and dropped whenever they change.
  std::vector<Group>& groups() const;
  // index, or index + size() when negative; throws unless in [0, size()), or [0, size()] with allow_end.
  size_t checked_index(int64_t index, bool allow_end, const char* what) const;
  std::string unused_name(const std::string& type) const;  // "linear2" for "Linear"
  // The fused lists of every group, for its own facts.
  std::shared_ptr<const FusedLists> lists_for(const std::function<FusionFacts(OperationFuser&)>& facts) const;
  // Per fusible group, per op: its arguments for this call, or null.
  std::vector<std::vector<std::shared_ptr<const CallArgs>>> resolve_call_args(const std::vector<OpCallArgs>& op_args) const;
  FusionFacts default_facts() const;

  std::vector<Entry> entries_;
  mutable std::vector<Group> groups_;
  bool training_ = true;
  FusionSwitches switches_;
};

// Sets a Sequential's fusion switches, or the global ones, for a scope, and puts back what was
// there however the scope ends (an exception included): for code that flips them to compare runs.
class FusionSwitchesScope {
 public:
  FusionSwitchesScope(Sequential& seq, const FusionSwitches& switches);
  explicit FusionSwitchesScope(const FusionSwitches& global);
  ~FusionSwitchesScope();
  FusionSwitchesScope(const FusionSwitchesScope&) = delete;
  FusionSwitchesScope& operator=(const FusionSwitchesScope&) = delete;

 private:
  Sequential* seq_;  // null: the global switches
  FusionSwitches saved_;
};

}  // namespace fuselab
