#include "fuser/sequential.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "autograd/grad_mode.h"
#include "ops/fused_op.h"

namespace fuselab {

SequentialEntry::SequentialEntry(std::shared_ptr<Sequential> nested)
    : module(std::make_shared<Module>(std::move(nested))) {}

Sequential::Sequential(std::initializer_list<Entry> entries) { extend(entries); }

Sequential::Sequential(const std::vector<std::shared_ptr<BasicOp>>& ops) { extend(ops); }

Sequential::Sequential(const std::vector<std::pair<std::string, Entry>>& named) {
  for (const auto& [name, entry] : named) {
    check(!name.empty(), "Sequential: empty name for ", entry.describe());
    check(entry.op || entry.module, "Sequential: null entry named '", name, "'");
    if (entry.op) entry.op->set_name(name);
    else entry.module->set_name(name);
    append(entry);
  }
}

size_t Sequential::checked_index(int64_t index, bool allow_end, const char* what) const {
  const int64_t size = int64_t(entries_.size());
  const int64_t i = index < 0 ? index + size : index;
  check(i >= 0 && (i < size || (allow_end && i == size)), "Sequential::", what, ": index ", index,
        " is out of range for ", size, " entries");
  return size_t(i);
}

std::string Sequential::unused_name(const std::string& type) const {
  std::string base;
  for (char c : type) base += char(std::tolower(static_cast<unsigned char>(c)));
  for (int index = 0;; ++index) {
    const std::string name = base + std::to_string(index);
    if (std::none_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.name() == name; })) return name;
  }
}

namespace {

// Whether `seq` is `target` or holds it at any depth (insert keeps the nesting free of cycles).
bool reaches(const Sequential& seq, const Sequential* target) {
  if (&seq == target) return true;
  for (const Sequential::Entry& entry : seq) {
    if (entry.module && entry.module->nested() && reaches(*entry.module->nested(), target)) return true;
  }
  return false;
}

}  // namespace

Sequential& Sequential::insert(int64_t index, Entry entry) {
  const size_t at = checked_index(index, /*allow_end=*/true, "insert");
  check(entry.op || entry.module, "Sequential::insert: null op");
  check(!entry.module || !entry.module->nested() || !reaches(*entry.module->nested(), this),
        "Sequential::insert: a Sequential cannot hold itself, directly or through the Sequentials it holds");
  for (const Entry& existing : entries_) {
    const bool same = entry.op ? existing.op == entry.op : existing.module == entry.module;
    check(!same, "Sequential::insert: ", entry.describe(), " is already in it");
  }
  if (entry.name().empty()) {
    const std::string name = unused_name(entry.op ? entry.op->type() : entry.module->type());
    if (entry.op) entry.op->set_name(name);
    else entry.module->set_name(name);
  }
  for (const Entry& existing : entries_) {
    check(existing.name() != entry.name(), "Sequential::insert: the name '", entry.name(), "' of ", entry.describe(),
          " is taken by ", existing.describe());
  }
  entries_.insert(entries_.begin() + long(at), std::move(entry));
  groups_.clear();  // channels and fused lists are rebuilt for the new list
  return *this;
}

Sequential& Sequential::append(Entry entry) { return insert(int64_t(entries_.size()), std::move(entry)); }

Sequential& Sequential::append(const std::vector<std::shared_ptr<BasicOp>>& ops) { return extend(ops); }

Sequential& Sequential::extend(std::initializer_list<Entry> entries) {
  for (const Entry& entry : entries) append(entry);
  return *this;
}

Sequential& Sequential::extend(const std::vector<std::shared_ptr<BasicOp>>& ops) {
  for (const auto& op : ops) append(op);
  return *this;
}

Sequential& Sequential::extend(const Sequential& other) {
  const std::vector<Entry> entries = other.entries_;  // other may be *this
  for (const Entry& entry : entries) append(entry);
  return *this;
}

Sequential::Entry Sequential::pop(int64_t index) {
  const size_t at = checked_index(index, /*allow_end=*/false, "pop");
  const Entry entry = entries_[at];
  entries_.erase(entries_.begin() + long(at));
  groups_.clear();
  return entry;
}

const Sequential::Entry& Sequential::operator[](int64_t index) const {
  return entries_[checked_index(index, /*allow_end=*/false, "operator[]")];
}

Sequential Sequential::slice(int64_t begin, int64_t end) const {
  const size_t from = checked_index(begin, /*allow_end=*/true, "slice");
  const size_t to = checked_index(end, /*allow_end=*/true, "slice");
  check(from <= to, "Sequential::slice: begin ", begin, " comes after end ", end, " (", entries_.size(), " entries)");
  Sequential part;
  for (size_t i = from; i < to; ++i) part.append(entries_[i]);
  part.training_ = training_;
  part.switches_ = switches_;
  return part;
}

std::vector<std::shared_ptr<BasicOp>> Sequential::ops() const {
  std::vector<std::shared_ptr<BasicOp>> ops;
  for (const Entry& entry : entries_) {
    if (entry.op) ops.push_back(entry.op);
  }
  return ops;
}

namespace {

// A fuser wires channels inside its own tape node; a Module in between records nodes of its own,
// so a binding across it has no fuser to carry it.
void check_channels_within_groups(const std::vector<SequentialEntry>& entries) {
  std::vector<size_t> group_of(entries.size());
  std::vector<const Module*> group_module;  // per group: its Module, or null for basic ops
  for (size_t e = 0; e < entries.size(); ++e) {
    if (e == 0 || entries[e].module || entries[e - 1].module) group_module.push_back(entries[e].module.get());
    group_of[e] = group_module.size() - 1;
  }
  std::map<std::string, size_t> producers;  // channel -> entry
  for (size_t e = 0; e < entries.size(); ++e) {
    const BasicOp* op = entries[e].op.get();
    for (int s = 0; op && s < op->num_extra_outputs(); ++s) {
      const std::string& channel = op->extra_output_channel(s);
      if (channel.empty()) continue;
      const auto [it, inserted] = producers.insert({channel, e});
      check(inserted, "Sequential: channel '", channel, "' has two producers, ", entries[it->second].describe(),
            " and ", op->describe());
    }
  }
  for (size_t e = 0; e < entries.size(); ++e) {
    const BasicOp* op = entries[e].op.get();
    for (int s = 0; op && s < op->num_extra_inputs(); ++s) {
      const auto it = producers.find(op->extra_input_channel(s));
      if (it == producers.end() || group_of[it->second] == group_of[e]) continue;
      fail("Sequential: ", op->describe(), " reads channel '", it->first, "' from ", entries[it->second].describe(),
           " across the Module ", group_module[std::max(group_of[e], group_of[it->second]) - 1]->describe(),
           ": channels may not cross a Module; pass the tensor out as an extra output and back in as an extra input");
    }
  }
}

void add_item(std::string& list, const std::string& item) { list += (list.empty() ? "" : ", ") + item; }

// `part`, whose covers index its own ops, appended to `into`, with ops[0] of `part` at `offset`.
void append_shifted(IndexedOpList& into, const IndexedOpList& part, size_t offset) {
  into.ops.insert(into.ops.end(), part.ops.begin(), part.ops.end());
  for (std::vector<size_t> cover : part.covers) {
    for (size_t& i : cover) i += offset;
    into.covers.push_back(std::move(cover));
  }
}

}  // namespace

std::vector<Sequential::Group>& Sequential::groups() const {
  if (!groups_.empty()) return groups_;
  check_channels_within_groups(entries_);
  std::vector<Group> groups;
  for (const Entry& entry : entries_) {
    if (entry.module) {
      groups.push_back({entry.module, {}, nullptr});
      continue;
    }
    if (groups.empty() || groups.back().module) groups.emplace_back();
    groups.back().ops.push_back(entry.op);
  }
  for (Group& group : groups) {
    if (group.module) continue;
    group.fuser = std::make_unique<OperationFuser>(group.ops);
    group.fuser->set_disabled_fusions(switches_.disabled);
  }
  groups_ = std::move(groups);
  return groups_;
}

Tensor Sequential::operator()(const Tensor& x) {
  SequentialOutput out = (*this)(x, {});
  check(out.extra_outputs.empty(), "Sequential: it returns ", out.extra_outputs.size(),
        " extra output(s); call seq(x, {extra inputs}) to receive them");
  return out.output;
}

SequentialOutput Sequential::operator()(const Tensor& x, const std::vector<Tensor>& extra_inputs) {
  return (*this)(x, extra_inputs, {});
}

std::vector<std::vector<std::shared_ptr<const CallArgs>>> Sequential::resolve_call_args(
    const std::vector<OpCallArgs>& op_args) const {
  std::vector<std::vector<std::shared_ptr<const CallArgs>>> resolved;
  if (op_args.empty()) return resolved;
  for (const Group& group : groups()) {
    if (group.fuser) resolved.emplace_back(group.ops.size());
  }
  for (const OpCallArgs& given : op_args) {
    std::shared_ptr<BasicOp> op = given.target.op;
    check(op || !given.target.by_op, "Sequential: per-call arguments for a null op");
    if (!op) {
      const Entry& entry = (*this)[given.target.index];
      check(entry.op != nullptr, "Sequential: per-call arguments for entry ", given.target.index, ", ",
            entry.describe(), ", which is a Module, not a basic op");
      op = entry.op;
    }
    bool found = false;
    size_t fusible = 0;
    for (const Group& group : groups()) {
      if (!group.fuser) continue;
      for (size_t i = 0; i < group.ops.size(); ++i) {
        if (group.ops[i] != op) continue;
        check(!resolved[fusible][i], "Sequential: per-call arguments given twice for ", op->describe());
        op->check_call_args(given.args);
        resolved[fusible][i] = std::make_shared<const CallArgs>(given.args);
        found = true;
      }
      ++fusible;
    }
    if (found) continue;
    std::string names;
    for (const Entry& entry : entries_) add_item(names, entry.name());
    fail("Sequential: per-call arguments for ", op->describe(), ", which is not a basic op of this Sequential [", names,
         "]");
  }
  return resolved;
}

SequentialOutput Sequential::operator()(const Tensor& x, const std::vector<Tensor>& extra_inputs,
                                        const std::vector<OpCallArgs>& op_args) {
  check(!entries_.empty(), "Sequential: no ops to run");
  std::vector<Group>& groups = this->groups();
  const auto call_args = resolve_call_args(op_args);
  static const std::vector<std::shared_ptr<const CallArgs>> no_args;
  auto args_of = [&](size_t fusible) -> const auto& { return call_args.empty() ? no_args : call_args[fusible]; };
  if (groups.size() == 1 && groups[0].fuser) {
    return groups[0].fuser->run(x, extra_inputs, training_, fusion_active(), args_of(0));
  }
  size_t expected = 0, fusible_groups = 0;
  for (const Group& group : groups) {
    if (!group.fuser) continue;
    expected += size_t(group.fuser->plan().num_caller_inputs);
    ++fusible_groups;
  }
  check(extra_inputs.size() == expected, "Sequential: expected ", expected,
        " extra input(s) for the unbound extra-input slots of its ", fusible_groups, " fusible group(s), got ",
        extra_inputs.size());
  SequentialOutput out{x, {}};
  size_t next_input = 0, fusible = 0;
  for (Group& group : groups) {
    if (group.module) {
      out.output = (*group.module)(out.output);
      continue;
    }
    const auto first = extra_inputs.begin() + long(next_input);
    next_input += size_t(group.fuser->plan().num_caller_inputs);
    SequentialOutput part = group.fuser->run(out.output, std::vector<Tensor>(first, extra_inputs.begin() + long(next_input)),
                                             training_, fusion_active(), args_of(fusible++));
    out.output = part.output;
    out.extra_outputs.insert(out.extra_outputs.end(), part.extra_outputs.begin(), part.extra_outputs.end());
  }
  return out;
}

namespace {

// Whether `p` is among `seen` (the same tensor: a parameter shared by two ops counts once).
bool already_listed(const std::vector<Tensor>& seen, const Tensor& p) {
  return std::any_of(seen.begin(), seen.end(), [&](const Tensor& q) { return q.same(p); });
}

}  // namespace

std::vector<Tensor> Sequential::parameters() const {
  std::vector<Tensor> params;
  for (const Entry& entry : entries_) {
    for (const Tensor& p : entry.op ? entry.op->parameters() : entry.module->parameters()) {
      if (!already_listed(params, p)) params.push_back(p);
    }
  }
  return params;
}

NamedTensors Sequential::named_parameters() const {
  NamedTensors named;
  std::vector<Tensor> listed;
  auto add = [&](const std::string& key, const Tensor& p) {
    if (already_listed(listed, p)) return;
    listed.push_back(p);
    named[key] = p;
  };
  for (const Entry& entry : entries_) {
    if (entry.module) {
      for (const auto& [key, p] : entry.module->named_parameters()) add(entry.name() + "." + key, p);
      continue;
    }
    const BasicOp& op = *entry.op;
    for (size_t p = 0; p < op.parameters().size(); ++p) add(op.name() + "." + op.parameter_names()[p], op.parameters()[p]);
  }
  return named;
}

void Sequential::zero_grad() {
  for (Tensor& p : parameters()) p.zero_grad();
}

Sequential& Sequential::train(bool on) {
  training_ = on;
  for (const Entry& entry : entries_) {
    if (entry.module) entry.module->train(on);
  }
  return *this;
}

Sequential& Sequential::to(Device device) {
  for (const Entry& entry : entries_) {
    if (entry.op) entry.op->to(device);
    else entry.module->to(device);
  }
  return *this;
}

Sequential& Sequential::to(DType dtype) {
  for (const Entry& entry : entries_) {
    if (entry.op) entry.op->to(dtype);
    else entry.module->to(dtype);
  }
  return *this;
}

Sequential& Sequential::set_fusion_switches(const FusionSwitches& switches) {
  switches_ = switches;
  for (Group& group : groups_) {  // groups built later take them as they are made
    if (group.fuser) group.fuser->set_disabled_fusions(switches_.disabled);
  }
  return *this;
}

bool Sequential::fusion_active() const { return switches_.enabled && global_fusion_enabled(); }

FusionSwitchesScope::FusionSwitchesScope(Sequential& seq, const FusionSwitches& switches)
    : seq_(&seq), saved_(seq.fusion_switches()) {
  seq.set_fusion_switches(switches);
}

FusionSwitchesScope::FusionSwitchesScope(const FusionSwitches& global) : seq_(nullptr), saved_(global_fusion_switches()) {
  set_global_fusion_switches(global);
}

FusionSwitchesScope::~FusionSwitchesScope() {
  if (seq_) seq_->set_fusion_switches(saved_);
  else set_global_fusion_switches(saved_);
}

FusionFacts Sequential::default_facts() const {
  FusionFacts facts;
  for (const Entry& entry : entries_) {
    const BasicOp* op = entry.op.get();
    if (!op || op->parameters().empty()) continue;
    facts.device = op->parameters()[0].device();
    facts.dtype = op->parameters()[0].dtype();
    break;
  }
  facts.training = training_;
  facts.grad_enabled = is_grad_enabled();
  return facts;
}

std::shared_ptr<const FusedLists> Sequential::lists_for(
    const std::function<FusionFacts(OperationFuser&)>& facts_of) const {
  std::vector<Group>& groups = this->groups();
  if (groups.size() == 1 && groups[0].fuser) return groups[0].fuser->lists(facts_of(*groups[0].fuser), fusion_active());
  auto joined = std::make_shared<FusedLists>();
  size_t offset = 0;
  for (Group& group : groups) {
    if (!group.fuser) continue;
    const auto lists = group.fuser->lists(facts_of(*group.fuser), fusion_active());
    append_shifted(joined->forward, lists->forward, offset);
    append_shifted(joined->backward, lists->backward, offset);
    offset += group.ops.size();
  }
  return joined;
}

std::shared_ptr<const FusedLists> Sequential::fused_lists(const FusionFacts& facts) {
  return lists_for([&](OperationFuser&) { return facts; });
}

std::shared_ptr<const FusedLists> Sequential::fused_lists() {
  const FusionFacts defaults = default_facts();
  return lists_for([&](OperationFuser& fuser) { return fuser.last_facts().value_or(defaults); });
}

std::string Sequential::explain() {
  const FusionFacts defaults = default_facts();
  // The matches below are what the fusions would do; with fusion off the ops run unfused.
  std::string text = fusion_active() ? "" : "fusion is off for this Sequential: the ops run unfused\n";
  for (Group& group : groups()) {
    if (!group.fuser) continue;
    const FusionFacts facts = group.fuser->last_facts().value_or(defaults);
    std::string fallbacks;
    for (const auto& op : group.fuser->lists(facts, fusion_active())->forward.ops) {
      const auto* fused = dynamic_cast<const FusedOp*>(op.get());
      if (fused && !fused->fallback().empty()) fallbacks += "  " + fused->describe() + ": " + fused->fallback() + "\n";
    }
    if (groups().size() > 1) {
      std::string names;
      for (const auto& op : group.ops) add_item(names, op->name());
      text += "group [" + names + "]:\n";
    }
    text += group.fuser->explain(facts).str();
    if (!fallbacks.empty()) text += "device fallbacks (seen at run time):\n" + fallbacks;
  }
  return text;
}

std::string Sequential::describe() {
  const FusionFacts defaults = default_facts();
  std::string forward, backward;
  for (Group& group : groups()) {
    if (group.module) {
      add_item(forward, group.module->describe());
      add_item(backward, group.module->describe());
      continue;
    }
    const auto lists = group.fuser->lists(group.fuser->last_facts().value_or(defaults), fusion_active());
    for (const auto& op : lists->forward.ops) add_item(forward, op->describe());
    for (const auto& op : lists->backward.ops) add_item(backward, op->describe());
  }
  return "forward: [" + forward + "]\nbackward: [" + backward + "]";
}

std::vector<std::optional<SavedSummary>> Sequential::last_saved() {
  std::vector<std::optional<SavedSummary>> saved;
  for (Group& group : groups()) {
    if (!group.fuser) continue;
    std::vector<std::optional<SavedSummary>> part = group.fuser->last_saved();
    part.resize(group.ops.size());  // a group that has not run yet: none for each op
    saved.insert(saved.end(), part.begin(), part.end());
  }
  return saved;
}

}  // namespace fuselab
