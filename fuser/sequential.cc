#include "fuser/sequential.h"

#include <algorithm>
#include <cctype>

#include "autograd/grad_mode.h"
#include "ops/fused_op.h"

namespace fuselab {

Sequential::Sequential(std::vector<std::shared_ptr<BasicOp>> ops) { append(ops); }

Sequential& Sequential::append(std::shared_ptr<BasicOp> op) {
  check(op != nullptr, "Sequential::append: null op");
  for (const auto& existing : ops_) check(existing != op, "Sequential::append: ", op->describe(), " is already in it");
  if (op->name().empty()) {
    std::string type;
    for (char c : op->type()) type += char(std::tolower(static_cast<unsigned char>(c)));
    int index = 0;
    for (const auto& existing : ops_) index += existing->type() == op->type();
    op->set_name(type + std::to_string(index));
  }
  ops_.push_back(std::move(op));
  fuser_.reset();  // channels and fused lists are rebuilt for the new list
  return *this;
}

Sequential& Sequential::append(const std::vector<std::shared_ptr<BasicOp>>& ops) {
  for (const auto& op : ops) append(op);
  return *this;
}

OperationFuser& Sequential::fuser() {
  if (!fuser_) {
    fuser_ = std::make_unique<OperationFuser>(ops_);
    fuser_->set_disabled_fusions(disabled_fusions_);
  }
  return *fuser_;
}

Tensor Sequential::operator()(const Tensor& x) {
  SequentialOutput out = (*this)(x, {});
  check(out.extra_outputs.empty(), "Sequential: it returns ", out.extra_outputs.size(),
        " extra output(s); call seq(x, {extra inputs}) to receive them");
  return out.output;
}

SequentialOutput Sequential::operator()(const Tensor& x, const std::vector<Tensor>& extra_inputs) {
  check(!ops_.empty(), "Sequential: no ops to run");
  return fuser().run(x, extra_inputs, training_, fusion_active());
}

std::vector<Tensor> Sequential::parameters() const {
  std::vector<Tensor> params;
  for (const auto& op : ops_) params.insert(params.end(), op->parameters().begin(), op->parameters().end());
  return params;
}

NamedTensors Sequential::named_parameters() const {
  NamedTensors named;
  for (const auto& op : ops_) {
    for (size_t p = 0; p < op->parameters().size(); ++p) named[op->name() + "." + op->parameter_names()[p]] = op->parameters()[p];
  }
  return named;
}

void Sequential::zero_grad() {
  for (Tensor& p : parameters()) p.zero_grad();
}

Sequential& Sequential::train(bool on) {
  training_ = on;
  return *this;
}

Sequential& Sequential::to(Device device) {
  for (const auto& op : ops_) op->to(device);
  return *this;
}

Sequential& Sequential::to(DType dtype) {
  for (const auto& op : ops_) op->to(dtype);
  return *this;
}

Sequential& Sequential::set_fusion_enabled(bool enabled) {
  fusion_enabled_ = enabled;
  return *this;
}

Sequential& Sequential::set_fusion_enabled(const std::string& name, bool enabled) {
  if (enabled) disabled_fusions_.erase(name);
  else disabled_fusions_.insert(name);
  fuser().set_disabled_fusions(disabled_fusions_);
  return *this;
}

Sequential& Sequential::enable_only_fusions(const std::vector<std::string>& names) {
  disabled_fusions_.clear();
  for (const std::string& registered : registered_fusion_names()) {
    if (std::find(names.begin(), names.end(), registered) == names.end()) disabled_fusions_.insert(registered);
  }
  fuser().set_disabled_fusions(disabled_fusions_);
  return *this;
}

Sequential& Sequential::enable_all_fusions() {
  disabled_fusions_.clear();
  fuser().set_disabled_fusions(disabled_fusions_);
  return *this;
}

Sequential& Sequential::set_fusion_switches(const FusionSwitches& switches) {
  fusion_enabled_ = switches.enabled;
  disabled_fusions_ = switches.disabled;
  fuser().set_disabled_fusions(disabled_fusions_);
  return *this;
}

bool Sequential::fusion_active() const { return fusion_enabled_ && fusion_enabled_globally(); }

FusionFacts Sequential::default_facts() const {
  FusionFacts facts;
  for (const auto& op : ops_) {
    if (op->parameters().empty()) continue;
    facts.device = op->parameters()[0].device();
    facts.dtype = op->parameters()[0].dtype();
    break;
  }
  facts.training = training_;
  facts.grad_enabled = is_grad_enabled();
  return facts;
}

std::shared_ptr<const FusedLists> Sequential::fused_lists(const FusionFacts& facts) {
  return fuser().lists(facts, fusion_active());
}

std::shared_ptr<const FusedLists> Sequential::fused_lists() {
  return fused_lists(fuser().last_facts().value_or(default_facts()));
}

std::string Sequential::explain() {
  const FusionFacts facts = fuser().last_facts().value_or(default_facts());
  std::string fallbacks;
  for (const auto& op : fused_lists(facts)->forward.ops) {
    const auto* fused = dynamic_cast<const FusedOp*>(op.get());
    if (fused && !fused->fallback().empty()) fallbacks += "  " + fused->describe() + ": " + fused->fallback() + "\n";
  }
  const std::string log = fuser().explain(facts).str();
  return fallbacks.empty() ? log : log + "device fallbacks (seen at run time):\n" + fallbacks;
}

std::string Sequential::describe() {
  const auto lists = fused_lists();
  return "forward: " + describe_list(lists->forward.ops) + "\nbackward: " + describe_list(lists->backward.ops);
}

std::shared_ptr<const FusedLists> Sequential::current_lists() const {
  if (fuser_) return fuser_->lists(fuser_->last_facts().value_or(default_facts()), fusion_active());
  OperationFuser fresh(ops_);
  fresh.set_disabled_fusions(disabled_fusions_);
  return fresh.lists(default_facts(), fusion_active());
}

namespace {

// Text inside an HTML-like DOT label.
std::string dot_html(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string entry_type(const FusibleOp& op) {
  if (op.is_fused()) return static_cast<const FusedOp&>(op).type();
  return op.basic_ops()[0]->type();
}

// One node per entry, a table of its type and the basic ops it covers, where port b<i> is basic
// op i. The forward row puts the type above the ops, the backward row below them, so that the
// edges between the rows meet the op cells. HTML-like labels rather than records: dot keeps the
// invisible edges that hold a row in order only between non-record nodes.
void dot_cluster(std::string& dot, const std::string& name, const std::string& label, const std::string& prefix,
                 const IndexedOpList& list, const std::vector<std::shared_ptr<BasicOp>>& ops, bool type_on_top) {
  // Each row's title on its far side from the other row, clear of the edges between them.
  dot += "  subgraph cluster_" + name + " {\n    label=\"" + label + "\";\n    labelloc=\"" + (type_on_top ? "t" : "b") + "\";\n";
  for (size_t e = 0; e < list.ops.size(); ++e) {
    std::string cells;
    for (size_t i : list.covers[e]) cells += "<td port=\"b" + std::to_string(i) + "\">" + dot_html(ops[i]->name()) + "</td>";
    const std::string colour = list.ops[e]->is_fused() ? " bgcolor=\"lightblue\"" : "";
    const std::string type = "<tr><td colspan=\"" + std::to_string(list.covers[e].size()) + "\"" + colour + "><b>" +
                             dot_html(entry_type(*list.ops[e])) + "</b></td></tr>";
    const std::string rows = type_on_top ? type + "<tr>" + cells + "</tr>" : "<tr>" + cells + "</tr>" + type;
    dot += "    " + prefix + std::to_string(e) + " [label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\">" +
           rows + "</table>>];\n";
  }
  // One row, in forward op order.
  dot += "    { rank=same;";
  for (size_t e = 0; e < list.ops.size(); ++e) dot += " " + prefix + std::to_string(e) + ";";
  dot += " }\n";
  for (size_t e = 0; e + 1 < list.ops.size(); ++e)
    dot += "    " + prefix + std::to_string(e) + " -> " + prefix + std::to_string(e + 1) + " [style=invis];\n";
  dot += "  }\n";
}

}  // namespace

std::string Sequential::to_dot() const {
  const auto lists = current_lists();
  std::string dot = "digraph fusion {\n  node [shape=plaintext, fontname=\"Helvetica\"];\n";
  dot_cluster(dot, "forward", "forward list", "f", lists->forward, ops_, /*type_on_top=*/true);
  dot_cluster(dot, "backward", "backward list", "b", lists->backward, ops_, /*type_on_top=*/false);
  // Each basic op's context, filled by the forward entry, is read by the backward entry that
  // covers the op. What it holds is only known once a call has run, so the edges carry no label.
  std::vector<size_t> backward_entry(ops_.size());
  for (size_t e = 0; e < lists->backward.covers.size(); ++e)
    for (size_t i : lists->backward.covers[e]) backward_entry[i] = e;
  for (size_t e = 0; e < lists->forward.covers.size(); ++e) {
    for (size_t i : lists->forward.covers[e]) {
      const std::string port = ":b" + std::to_string(i);
      dot += "  f" + std::to_string(e) + port + ":s -> b" + std::to_string(backward_entry[i]) + port + ":n [style=dashed];\n";
    }
  }
  return dot + "}\n";
}

}  // namespace fuselab
