#include "fuser/sequential.h"

#include <algorithm>
#include <cctype>

#include "autograd/grad_mode.h"

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
  return fuser().explain(fuser().last_facts().value_or(default_facts())).str();
}

std::string Sequential::describe() {
  const auto lists = fused_lists();
  return "forward: " + describe_list(lists->forward.ops) + "\nbackward: " + describe_list(lists->backward.ops);
}

}  // namespace fuselab
