#include "ops/fused/recompute.h"

#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/dropout.h"
#include "ops/basic/gated_linear_unit.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/norm_op.h"
#include "ops/basic/rmsnorm.h"
#include "ops/fuse_window.h"
#include "tensor/tensor_math.h"

namespace fuselab {
namespace {

OpList basic_ops_of(const OpList& run) {
  OpList ops;
  for (const auto& op : run) {
    for (const auto& basic : op->basic_ops()) ops.push_back(basic);
  }
  return ops;
}

// The forward that keeps nothing runs the ops on copies of their contexts that ask for no backward.
OpContext without_backward(const OpContext& ctx) {
  OpContext copy;
  copy.training = ctx.training;
  copy.call_args = ctx.call_args;
  copy.params_require_grad.assign(ctx.params_require_grad.size(), false);
  return copy;
}

}  // namespace

NamedTensors RecomputeSaved::tensors() const {
  NamedTensors named{{"input", input}};
  for (size_t i = 0; i < extra_inputs.size(); ++i) {
    for (size_t s = 0; s < extra_inputs[i].size(); ++s) {
      if (extra_inputs[i][s].defined()) named["extra_input" + std::to_string(i) + "." + std::to_string(s)] = extra_inputs[i][s];
    }
  }
  return named;
}

Recompute::Recompute(const OpList& run) : FusedOp("Recompute", basic_ops_of(run), Pass::ForwardBackward), run_(run) {
  const auto ops = basic_ops();
  size_t begin = 0;
  for (const auto& op : run_) {
    first_.push_back(begin);
    begin += op->basic_ops().size();
  }
  first_.push_back(begin);
  // A channel has one producer, before its readers (the Sequential's channel plan checks both): a
  // reader's producer is inside the run when an earlier op of the run makes that channel.
  producer_.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    for (int s = 0; s < ops[i]->num_extra_inputs(); ++s) {
      const std::string& channel = ops[i]->extra_input_channel(s);
      std::optional<Slot> found;
      for (size_t j = 0; j < i && !channel.empty(); ++j) {
        for (int t = 0; t < ops[j]->num_extra_outputs(); ++t) {
          if (ops[j]->extra_output_channel(t) == channel) found = Slot{j, t};
        }
      }
      producer_[i].push_back(found);
    }
  }
}

std::string Recompute::describe() const {
  std::string text = "Recompute(";
  for (size_t k = 0; k < run_.size(); ++k) {
    const auto& op = run_[k];
    text += (k ? ", " : "") + (op->is_fused() ? op->describe() : op->basic_ops()[0]->name());
  }
  return text + ")";
}

// The run's forward: each op reads the extra inputs from outside as given, and those made inside
// the run from the extra outputs they were made as (undefined where its own op wires them).
FusedForward Recompute::run_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                                    const TensorLists& extra_inputs) {
  FusedForward out{x, TensorLists(basic_ops().size())};
  for (size_t k = 0; k < run_.size(); ++k) {
    const size_t begin = first_[k], end = first_[k + 1];
    TensorLists inputs;
    for (size_t i = begin; i < end; ++i) {
      inputs.push_back(extra_inputs[i]);
      for (size_t s = 0; s < producer_[i].size(); ++s) {
        if (const auto& p = producer_[i][s]) inputs.back()[s] = p->op < begin ? out.extra_outputs[p->op][p->slot] : Tensor();
      }
    }
    const std::vector<OpContext*> op_ctxs(ctxs.begin() + long(begin), ctxs.begin() + long(end));
    FusedForward step = run_[k]->fuser_forward(op_ctxs, out.output, inputs);
    for (size_t i = begin; i < end; ++i) out.extra_outputs[i] = std::move(step.extra_outputs[i - begin]);
    out.output = step.output;
  }
  return out;
}

FusedForward Recompute::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                                      const TensorLists& extra_inputs) {
  std::vector<OpContext> scratch;
  for (const OpContext* ctx : ctxs) scratch.push_back(without_backward(*ctx));
  std::vector<OpContext*> scratch_ptrs;
  for (OpContext& ctx : scratch) scratch_ptrs.push_back(&ctx);
  FusedForward out = run_forward(scratch_ptrs, x, extra_inputs);
  if (any_requires_backward(ctxs)) ctxs[0]->save<RecomputeSaved>() = {x, extra_inputs};
  return out;
}

FusedBackward Recompute::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                                        const TensorLists& grad_extra_outputs) {
  // The forward again, saving this time; it replaces RecomputeSaved in ctxs[0] with op 0's own
  // state, so it is put back at the end for a backward that retains the graph.
  const RecomputeSaved saved = ctxs[0]->saved<RecomputeSaved>(describe());
  run_forward(ctxs, saved.input, saved.extra_inputs);

  const auto ops = basic_ops();
  FusedBackward grads{dy, TensorLists(ops.size()), TensorLists(ops.size())};
  for (size_t i = 0; i < ops.size(); ++i) {  // undefined, for the ops that need no backward
    grads.grad_extra_inputs[i].resize(size_t(ops[i]->num_extra_inputs()));
    grads.grad_params[i].resize(ops[i]->parameters().size());
  }
  TensorLists output_grads = grad_extra_outputs;  // from outside, then from the readers inside
  for (size_t k = run_.size(); k-- > 0;) {
    const size_t begin = first_[k], end = first_[k + 1];
    const std::vector<OpContext*> op_ctxs(ctxs.begin() + long(begin), ctxs.begin() + long(end));
    if (!any_requires_backward(op_ctxs)) {  // nor does anything before it, as in the Sequential's own backward
      grads.grad_input = Tensor();
      break;
    }
    const TensorLists op_output_grads(output_grads.begin() + long(begin), output_grads.begin() + long(end));
    FusedBackward step = run_[k]->fuser_backward(op_ctxs, grads.grad_input, op_output_grads);
    for (size_t i = begin; i < end; ++i) {
      grads.grad_params[i] = std::move(step.grad_params[i - begin]);
      grads.grad_extra_inputs[i] = std::move(step.grad_extra_inputs[i - begin]);
      for (size_t s = 0; s < producer_[i].size(); ++s) {
        const auto& p = producer_[i][s];
        if (!p) continue;  // from outside: the run's grad
        if (p->op < begin) math::accumulate(output_grads[p->op][p->slot], grads.grad_extra_inputs[i][s]);
        grads.grad_extra_inputs[i][s] = Tensor();
      }
      ctxs[i]->clear_saved();  // this op's activations are spent
    }
    grads.grad_input = step.grad_input;
  }
  ctxs[0]->save<RecomputeSaved>() = saved;
  return grads;
}

std::optional<RecomputeScope> parse_recompute_scope(const std::string& word) {
  if (word == "none") return std::nullopt;
  if (word == "mlp") return RecomputeScope::MLP;
  if (word == "norms") return RecomputeScope::Norms;
  if (word == "block") return RecomputeScope::Block;
  fail("recompute: expected none, mlp, norms or block, got '", word, "'");
  return std::nullopt;
}

namespace {

// Reason: a Dropout that drops would draw a new mask when its forward runs again.
bool draws_masks(const FusibleOp& op, bool training) {
  for (const auto& basic : op.basic_ops()) {
    if (const auto* dropout = dynamic_cast<const Dropout*>(basic.get()); dropout && dropout->drops(training)) return true;
  }
  return false;
}

// Reason: a run started from its input alone needs ops that take nothing else and give nothing back
// but their output (the MLP and Norms scopes wire no channels).
bool plain(const BasicOp& op, bool training) {
  return op.num_extra_inputs() == 0 && op.num_extra_outputs() == 0 && !draws_masks(op, training);
}

// How many ops from the window's start form a run of plain ops.
size_t plain_run_length(const BasicOpWindow& window, bool training) {
  size_t n = 0;
  while (n < window.size() && plain(*window[n], training)) ++n;
  return n;
}

bool holds_activation(const BasicOpWindow& window, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (as<ActivationOp>(window[i]) || as<GatedLinearUnit>(window[i])) return true;
  }
  return false;
}

std::optional<WindowMatch> match_plain_run(RecomputeScope scope, const BasicOpWindow& window, bool training) {
  if (scope == RecomputeScope::Norms) {
    if (window.size() < 2 || !as<NormOp>(window[0]) || !as<Linear>(window[1])) return std::nullopt;
    return WindowMatch{2, std::make_shared<Recompute>(first_ops(window, 2))};
  }
  const size_t n = plain_run_length(window, training);
  // A run of one op gains nothing: its input is what it saves anyway, or close to it.
  if (n < 2 || !holds_activation(window, n)) return std::nullopt;
  return WindowMatch{n, std::make_shared<Recompute>(first_ops(window, n))};
}

// The last op in `ops` reading, on a channel, an extra output that ops[k] makes (k when none does).
size_t last_reader(const OpList& ops, size_t k) {
  std::vector<std::string> channels;
  for (const auto& op : ops[k]->basic_ops()) {
    for (int t = 0; t < op->num_extra_outputs(); ++t) {
      if (!op->extra_output_channel(t).empty()) channels.push_back(op->extra_output_channel(t));
    }
  }
  size_t last = k;
  for (size_t j = k + 1; j < ops.size(); ++j) {
    for (const auto& op : ops[j]->basic_ops()) {
      for (int s = 0; s < op->num_extra_inputs(); ++s) {
        for (const std::string& channel : channels) last = op->extra_input_channel(s) == channel ? j : last;
      }
    }
  }
  return last;
}

// The residual branch ops[i] opens: it runs to the last op reading a channel opened inside it.
// One past its last op, or i when ops[i] opens no channel read later or the branch holds an op
// that cannot run again (a Dropout that drops).
size_t branch_end(const OpList& ops, size_t i, bool training) {
  size_t end = last_reader(ops, i) + 1;
  if (end == i + 1) return i;
  for (size_t k = i; k < end; ++k) {
    if (draws_masks(*ops[k], training)) return i;
    end = std::max(end, last_reader(ops, k) + 1);
  }
  return end;
}

OpList recompute_branches(const OpList& ops, bool training) {
  OpList out;
  for (size_t i = 0; i < ops.size();) {
    const size_t end = branch_end(ops, i, training);
    if (end == i) {
      out.push_back(ops[i++]);
      continue;
    }
    out.push_back(std::make_shared<Recompute>(OpList(ops.begin() + long(i), ops.begin() + long(end))));
    i = end;
  }
  return out;
}

const char* scope_name(RecomputeScope scope) {
  switch (scope) {
    case RecomputeScope::MLP: return "RecomputeMLP";
    case RecomputeScope::Norms: return "RecomputeNorms";
    case RecomputeScope::Block: return "RecomputeBlock";
  }
  return "?";
}

}  // namespace

FusionDefinition recompute_fusion(RecomputeScope scope) {
  // Only a call that records a backward keeps activations; one that does not has nothing to save.
  FusionFunction fn = [scope](OpList ops, const FusionFacts& facts) {
    if (!facts.grad_enabled) return ops;
    if (scope == RecomputeScope::Block) return recompute_branches(ops, facts.training);
    constexpr size_t kLongestRun = 64;
    return fuse_window(ops, kLongestRun,
                       [&](const BasicOpWindow& w) { return match_plain_run(scope, w, facts.training); });
  };
  // Example: a pre-norm residual SwiGLU MLP branch, which every scope takes.
  FusionExampleMaker example = [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
    auto opens = std::make_shared<MakeExtraOutput>();
    auto closes = std::make_shared<AddExtraInput>();
    opens->set_extra_output_channel(0, "residual", /*to_caller=*/false);
    closes->set_extra_input_channel(0, "residual");
    return make_fusion_example({opens, std::make_shared<RMSNorm>(w), std::make_shared<Linear>(w, 2 * w, &gen),
                                std::make_shared<SwiGLU>(), std::make_shared<Linear>(w, w, &gen), closes},
                               rows, w, dtype, gen);
  };
  return {scope_name(scope), Pass::ForwardBackward, fn, example};
}

}  // namespace fuselab
