#include "ops/fused_op.h"

namespace fuselab {

FusedOp::FusedOp(std::string type, const OpList& ops, Pass pass) : type_(std::move(type)), pass_(pass) {
  check(!ops.empty(), type_, ": a fused op needs at least one basic op");
  for (const auto& op : ops) {
    auto basic = std::dynamic_pointer_cast<BasicOp>(op);
    check(basic != nullptr, type_, ": cannot contain the fused op ", op ? op->describe() : "null",
          " (fused ops never nest)");
    ops_.push_back(std::move(basic));
  }
}

bool FusedOp::implements(Pass pass) const {
  return pass_ == pass || pass_ == Pass::ForwardBackward;
}

void FusedOp::note_fallback(const std::string& what) {
  std::lock_guard<std::mutex> lock(fallback_mutex_);
  if (fallback_.empty()) fallback_ = what;
}

std::string FusedOp::fallback() const {
  std::lock_guard<std::mutex> lock(fallback_mutex_);
  return fallback_;
}

std::string FusedOp::describe() const {
  std::string text = type_ + "(";
  for (size_t i = 0; i < ops_.size(); ++i) text += (i ? ", " : "") + ops_[i]->name();
  return text + ")";
}

FusedForward FusedOp::fuser_forward(const std::vector<OpContext*>&, const Tensor&, const TensorLists&) {
  fail(describe(), " does not implement the forward pass");
}

FusedBackward FusedOp::fuser_backward(const std::vector<OpContext*>&, const Tensor&, const TensorLists&) {
  fail(describe(), " does not implement the backward pass");
}

}  // namespace fuselab
