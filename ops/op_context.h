// OpContext: the per-call state of one basic op, shared by the forward and backward passes.
//
// Whatever ran a basic op's forward (the op itself or a forward fused op) stores in its context
// the typed saved-state struct that the op's backward reads, so any backward fusion can consume
// it. Each basic op declares its struct next to it (LinearSaved, RMSNormSaved, ...).
//
// A struct may list its tensors by name (`NamedTensors tensors() const`), so that pictures and
// reports (fuser/fusion_picture.h) can say what a context holds between forward and backward and
// how many bytes, without knowing the op.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "ops/call_args.h"
#include "tensor/safetensors.h"  // NamedTensors
#include "tensor/tensor.h"

namespace fuselab {

// What one context holds once forward has run.
struct SavedSummary {
  std::string held;             // the saved tensors' names, "input, weight"; the struct's type if it lists none
  std::optional<size_t> bytes;  // their bytes (a tensor shared with another context counts in each)
};

namespace detail {

template <class S, class = void>
struct ListsTensors : std::false_type {};
template <class S>
struct ListsTensors<S, std::void_t<decltype(std::declval<const S&>().tensors())>> : std::true_type {};

template <class S>
SavedSummary summarize_saved(const void* state) {
  if constexpr (ListsTensors<S>::value) {
    SavedSummary summary{"", size_t(0)};
    for (const auto& [name, t] : static_cast<const S*>(state)->tensors()) {
      if (!t.defined()) continue;
      summary.held += (summary.held.empty() ? "" : ", ") + name;
      *summary.bytes += t.nbytes();
    }
    return summary;
  } else {
    return {typeid(S).name(), std::nullopt};
  }
}

}  // namespace detail

struct OpContext {
  bool training = true;
  // Whether backward must give this op's input a grad (something before it requires grad).
  bool input_requires_grad = false;
  // Whether each parameter of the op requires grad.
  std::vector<bool> params_require_grad;
  // Whether one of the op's extra inputs requires grad.
  bool extra_inputs_require_grad = false;
  // This call's arguments for the op (ops/call_args.h); null when the call gave it none.
  std::shared_ptr<const CallArgs> call_args;
  // Whether backward runs for this op at all.
  bool requires_backward() const {
    if (input_requires_grad || extra_inputs_require_grad) return true;
    for (bool p : params_require_grad) if (p) return true;
    return false;
  }

  // Creates (replacing any previous) the saved state of type S and returns it to fill.
  template <class S>
  S& save() {
    auto state = std::make_shared<S>();
    saved_ = state;
    saved_type_ = &typeid(S);
    summarize_ = &detail::summarize_saved<S>;
    return *state;
  }

  // The saved state of type S; throws naming `op` if forward stored none or another type.
  template <class S>
  S& saved(const std::string& op) const {
    check(saved_ != nullptr, op, " backward: the context holds no saved state; whatever ran this op's",
          " forward (fused or not) must fill its saved-state struct");
    check(*saved_type_ == typeid(S), op, " backward: the context holds saved state of type ",
          saved_type_->name(), ", expected ", typeid(S).name());
    return *static_cast<S*>(saved_.get());
  }

  bool has_saved_state() const { return saved_ != nullptr; }
  void clear_saved() { saved_.reset(); }
  // What the saved state holds now; none when forward saved nothing.
  std::optional<SavedSummary> saved_summary() const {
    if (!saved_) return std::nullopt;
    return summarize_(saved_.get());
  }

 private:
  std::shared_ptr<void> saved_;
  const std::type_info* saved_type_ = nullptr;
  SavedSummary (*summarize_)(const void*) = nullptr;
};

// Whether backward runs for any of a fused op's covered ops.
inline bool any_requires_backward(const std::vector<OpContext*>& ctxs) {
  for (const OpContext* ctx : ctxs) {
    if (ctx->requires_backward()) return true;
  }
  return false;
}

}  // namespace fuselab
