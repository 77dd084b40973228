#include "fuser/operation_fuser.h"

#include <algorithm>
#include <cstdio>
#include <exception>

#include "autograd/grad_mode.h"
#include "autograd/tape.h"
#include "runtime/settings.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {

std::string describe_list(const OpList& ops) {
  std::string text = "[";
  for (size_t i = 0; i < ops.size(); ++i) text += (i ? ", " : "") + ops[i]->describe();
  return text + "]";
}

namespace {

OpList as_op_list(const std::vector<std::shared_ptr<BasicOp>>& ops) { return OpList(ops.begin(), ops.end()); }

std::string names(const std::vector<std::shared_ptr<BasicOp>>& ops) {
  std::string text = "[";
  for (size_t i = 0; i < ops.size(); ++i) text += (i ? ", " : "") + ops[i]->name();
  return text + "]";
}

}  // namespace

OperationFuser::OperationFuser(std::vector<std::shared_ptr<BasicOp>> ops) {
  ChannelPlan plan = ChannelPlan::build(ops);
  for (const auto& op : ops) op->lock_channels();  // the plan holds the bindings from now on
  program_ = std::make_shared<const Program>(Program{std::move(ops), std::move(plan)});
}

IndexedOpList OperationFuser::check_cover(const OpList& ops, const std::string& fusion, Pass pass_kind) const {
  const char* pass = pass_name(pass_kind);
  const auto& expected = program_->ops;
  IndexedOpList indexed{ops, {}};
  std::vector<std::shared_ptr<BasicOp>> flat;
  for (const auto& op : ops) {
    check(op != nullptr, "fusion function '", fusion, "' (", pass, " pass) returned a null op");
    std::vector<size_t> cover;
    for (const auto& basic : op->basic_ops()) {
      cover.push_back(flat.size());
      flat.push_back(basic);
    }
    check(!cover.empty(), "fusion function '", fusion, "' (", pass, " pass) returned ", op->describe(),
          ", which covers no basic op");
    check(op->implements(pass_kind), "fusion function '", fusion, "' placed ", op->describe(), " in the ", pass,
          " list, but it does not implement the ", pass, " pass");
    indexed.covers.push_back(std::move(cover));
  }
  bool same = flat.size() == expected.size();
  for (size_t i = 0; same && i < flat.size(); ++i) same = flat[i] == expected[i];
  check(same, "fusion function '", fusion, "' (", pass,
        " pass) must return the same basic ops in the same order: expected ", names(expected), ", got ", names(flat));
  return indexed;
}

namespace {

// Fused ops in `after` that were not in `before`: what a fusion function created.
void log_new_fused_ops(const OpList& before, const OpList& after, FusionStepLog& step) {
  for (const auto& op : after) {
    if (!op->is_fused() || std::find(before.begin(), before.end(), op) != before.end()) continue;
    std::string where;
    for (const auto& basic : op->basic_ops()) where += (where.empty() ? "" : ", ") + basic->name();
    step.events.push_back({FusionEvent::Kind::Matched, where, op->describe()});
  }
}

bool fusion_log_requested() { return runtime::settings().fusion_log; }

}  // namespace

FusedLists OperationFuser::fuse_lists(const FusionFacts& facts, ExplainLog* log) const {
  const FusionSnapshot snapshot = fusion_snapshot();
  auto apply = [&](OpList ops, const std::vector<RegisteredFusion>& fusions, Pass pass_kind) {
    const char* pass = pass_name(pass_kind);
    IndexedOpList indexed = check_cover(ops, "(none)", pass_kind);
    PassLog* pass_log = log ? &log->passes.emplace_back(PassLog{pass, {}}) : nullptr;
    for (const RegisteredFusion& fusion : fusions) {
      FusionStepLog step{fusion.name, snapshot.disabled.count(fusion.name) || disabled_.count(fusion.name) > 0, {}};
      if (!step.disabled) {
        OpList fused;
        {
          FusionStepScope scope(log ? &step : nullptr);
          try {
            fused = fusion.fn(indexed.ops, facts);
          } catch (const Error& e) {
            fail("fusion function '", fusion.name, "' (", pass, " pass) failed: ", e.what());
          } catch (const std::exception& e) {  // e.g. std::out_of_range from ops.at(): still name the fusion
            fail("fusion function '", fusion.name, "' (", pass, " pass) threw an exception: ", e.what());
          } catch (...) {
            fail("fusion function '", fusion.name, "' (", pass, " pass) threw an exception that is not a std::exception");
          }
        }
        // Hand-written fusion functions report nothing themselves: log what they created.
        if (log && step.events.empty()) log_new_fused_ops(indexed.ops, fused, step);
        indexed = check_cover(fused, fusion.name, pass_kind);
      }
      if (pass_log) pass_log->steps.push_back(std::move(step));
    }
    return indexed;
  };
  const IndexedOpList joint = apply(as_op_list(program_->ops), snapshot.joint, Pass::ForwardBackward);
  FusedLists lists{apply(joint.ops, snapshot.forward, Pass::Forward),
                   apply(joint.ops, snapshot.backward, Pass::Backward)};
  return lists;
}

ExplainLog OperationFuser::explain(const FusionFacts& facts) const {
  ExplainLog log;
  fuse_lists(facts, &log);
  return log;
}

void OperationFuser::set_disabled_fusions(std::set<std::string> names) {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  disabled_ = std::move(names);
  cache_.clear();
}

std::shared_ptr<const FusedLists> OperationFuser::lists(const FusionFacts& facts, bool fuse) {
  const uint64_t generation = fusion_registry_generation();
  std::lock_guard<std::mutex> lock(cache_mutex_);
  last_facts_ = facts;
  if (generation != cache_generation_) {
    cache_.clear();
    cache_generation_ = generation;
  }
  for (const CacheEntry& entry : cache_) {
    if (entry.facts == facts && entry.fuse == fuse) return entry.lists;
  }
  std::shared_ptr<const FusedLists> lists;
  if (fuse) {
    if (fusion_log_requested()) {
      ExplainLog log;
      lists = std::make_shared<const FusedLists>(fuse_lists(facts, &log));
      std::fprintf(stderr, "[fuselab] fused a Sequential of %zu ops:\n%s", program_->ops.size(), log.str().c_str());
    } else {
      lists = std::make_shared<const FusedLists>(fuse_lists(facts, nullptr));
    }
  } else {
    const IndexedOpList basic = check_cover(as_op_list(program_->ops), "(fusion off)", Pass::ForwardBackward);
    lists = std::make_shared<const FusedLists>(FusedLists{basic, basic});
  }
  cache_.push_back({facts, fuse, lists});
  return lists;
}

std::optional<FusionFacts> OperationFuser::last_facts() {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  return last_facts_;
}

// What one call keeps for its backward: the lists it ran with, one context per basic op, and
// the output's shape, to stand in zeros for its grad when nobody produced one.
namespace {

// A parameter as the forward read it: the backward must read the same.
struct ParameterAtForward {
  Tensor tensor;
  Shape shape;
  DType dtype;
  Device device;
};

}  // namespace

struct OperationFuser::CallState {
  std::shared_ptr<const Program> program;
  std::shared_ptr<const FusedLists> lists;
  std::vector<OpContext> ctxs;
  std::vector<ParameterAtForward> parameters;  // every op's, in order
  // [op][slot]: whether backward must give that extra input a grad (its source requires one).
  std::vector<std::vector<bool>> extra_inputs_require_grad;
  Shape output_shape;
  DType dtype;
  Device device;
};

std::vector<std::optional<SavedSummary>> OperationFuser::last_saved() {
  std::shared_ptr<CallState> call;
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    call = last_call_.lock();
  }
  std::vector<std::optional<SavedSummary>> saved;
  if (!call) return saved;
  for (const OpContext& ctx : call->ctxs) saved.push_back(ctx.saved_summary().value_or(SavedSummary{"", size_t(0)}));
  return saved;
}

namespace {

// The dtype fusion sees: the parameters' (the input may hold integer ids).
DType compute_dtype(const std::vector<std::shared_ptr<BasicOp>>& ops, const Tensor& input) {
  for (const auto& op : ops) {
    if (!op->parameters().empty()) return op->parameters()[0].dtype();
  }
  return input.dtype();
}

// Fills each context's grad requirements: an op's input needs a grad when anything before it
// (the input, a parameter, an extra input) does; a channel input when its producer's input does
// and the producer's extra output is differentiable.
// `slot_requirements` receives the same per extra-input slot.
void set_grad_requirements(std::vector<OpContext>& ctxs, std::vector<std::vector<bool>>& slot_requirements,
                           const std::vector<std::shared_ptr<BasicOp>>& ops, const ChannelPlan& plan,
                           const Tensor& input, const std::vector<Tensor>& extra_inputs, bool record, bool training) {
  bool upstream_needs_grad = record && input.requires_grad();
  std::vector<bool> produces_grad(ops.size());
  slot_requirements.assign(ops.size(), {});
  for (size_t i = 0; i < ops.size(); ++i) {
    OpContext& ctx = ctxs[i];
    ctx.training = training;
    ctx.input_requires_grad = upstream_needs_grad;
    for (const Tensor& p : ops[i]->parameters()) ctx.params_require_grad.push_back(record && p.requires_grad());
    for (const ExtraInputSource& source : plan.inputs[i]) {
      // An undefined extra input is the op's to name (its forward checks for it).
      const Tensor* given = source.caller_index >= 0 ? &extra_inputs[size_t(source.caller_index)] : nullptr;
      const bool required = given ? record && given->defined() && given->requires_grad()
                                                     : produces_grad[source.producer.op] &&
                                                           ops[source.producer.op]->extra_output_differentiable(
                                                               source.producer.slot);
      slot_requirements[i].push_back(required);
      ctx.extra_inputs_require_grad |= required;
    }
    upstream_needs_grad = ctx.requires_backward();
    produces_grad[i] = upstream_needs_grad;
  }
}

// Checks what a fused op's forward returned for the basic ops it covers.
void check_forward_result(const FusedForward& result, const FusibleOp& fused, const std::vector<size_t>& cover,
                          const std::vector<std::shared_ptr<BasicOp>>& ops, const ChannelPlan& plan) {
  const std::string who = fused.describe();
  check(result.output.defined(), who, " forward returned no output");
  check(result.extra_outputs.size() == cover.size(), who, " forward returned extra outputs for ",
        result.extra_outputs.size(), " basic ops, expected ", cover.size());
  for (size_t c = 0; c < cover.size(); ++c) {
    const size_t i = cover[c];
    check(int(result.extra_outputs[c].size()) == ops[i]->num_extra_outputs(), who, " forward returned ",
          result.extra_outputs[c].size(), " extra outputs for ", ops[i]->describe(), ", expected ",
          ops[i]->num_extra_outputs());
    for (int s = 0; s < ops[i]->num_extra_outputs(); ++s) {
      bool used_outside = plan.output_caller_index[i][s] >= 0;
      for (size_t consumer : plan.consumers[i][s]) used_outside |= consumer > cover.back();
      check(result.extra_outputs[c][s].defined() || !used_outside, who, " forward left extra output ", s, " of ",
            ops[i]->describe(), " undefined, but it is used outside this fused op");
    }
  }
}

// Where extra input `slot` of ops[op] comes from, for messages.
std::string describe_source(const ChannelPlan& plan, const std::vector<std::shared_ptr<BasicOp>>& ops, size_t op,
                            int slot) {
  const ExtraInputSource& source = plan.inputs[op][slot];
  if (source.caller_index >= 0) return "the call's extra input " + std::to_string(source.caller_index);
  return "channel '" + ops[op]->extra_input_channel(slot) + "' from " + ops[source.producer.op]->describe();
}

// A grad left undefined where one is required would leave a parameter or an earlier op without
// its grad, silently: the optimizer would skip it and training would go wrong without a word.
void check_required_grads_defined(const FusedBackward& result, const std::string& who,
                                  const std::vector<size_t>& cover, const std::vector<std::shared_ptr<BasicOp>>& ops,
                                  const ChannelPlan& plan, const std::vector<OpContext>& ctxs,
                                  const std::vector<std::vector<bool>>& slot_requirements) {
  for (size_t c = 0; c < cover.size(); ++c) {
    const size_t i = cover[c];
    const BasicOp& op = *ops[i];
    for (size_t p = 0; p < op.parameters().size(); ++p) {
      check(result.grad_params[c][p].defined() || !ctxs[i].params_require_grad[p], who,
            " backward returned no grad for parameter ", op.describe(), ".", op.parameter_names()[p],
            ", which requires one");
    }
    for (int s = 0; s < op.num_extra_inputs(); ++s) {
      const ExtraInputSource& source = plan.inputs[i][s];
      const bool used = source.caller_index >= 0 || source.producer.op < cover.front();  // else wired inside
      check(result.grad_extra_inputs[c][s].defined() || !used || !slot_requirements[i][s], who,
            " backward returned no grad for extra input ", s, " of ", op.describe(), " (",
            describe_source(plan, ops, i, s), "), which requires one");
    }
  }
}

// Checks what a fused op's backward returned for the basic ops it covers.
void check_backward_result(const FusedBackward& result, const FusibleOp& fused, const std::vector<size_t>& cover,
                           const std::vector<std::shared_ptr<BasicOp>>& ops, bool input_requires_grad) {
  const std::string who = fused.describe();
  check(result.grad_params.size() == cover.size() && result.grad_extra_inputs.size() == cover.size(), who,
        " backward returned grads for ", result.grad_params.size(), " (params) and ", result.grad_extra_inputs.size(),
        " (extra inputs) basic ops, expected ", cover.size());
  check(result.grad_input.defined() || !input_requires_grad, who,
        " backward returned no input grad, but its input requires one");
  for (size_t c = 0; c < cover.size(); ++c) {
    const BasicOp& op = *ops[cover[c]];
    const auto& params = op.parameters();
    check(result.grad_params[c].size() == params.size(), who, " backward returned ", result.grad_params[c].size(),
          " param grads for ", op.describe(), ", expected ", params.size());
    check(int(result.grad_extra_inputs[c].size()) == op.num_extra_inputs(), who, " backward returned ",
          result.grad_extra_inputs[c].size(), " extra-input grads for ", op.describe(), ", expected ",
          op.num_extra_inputs());
    for (size_t p = 0; p < params.size(); ++p) {
      const Tensor& g = result.grad_params[c][p];
      check(!g.defined() || g.shape() == params[p].shape(), who, " backward: grad of ", op.describe(), ".",
            op.parameter_names()[p], " has shape ", g.defined() ? g.shape() : Shape{}, ", expected ",
            params[p].shape());
    }
  }
}

// The call passes one extra input per unbound extra-input slot, in op order. A short list names
// the op that the first missing one is for, so the caller knows which tensor they forgot.
void check_extra_input_count(const ChannelPlan& plan, const std::vector<std::shared_ptr<BasicOp>>& ops,
                             size_t given) {
  if (int(given) == plan.num_caller_inputs) return;
  std::string missing;
  for (size_t i = 0; i < ops.size() && missing.empty(); ++i) {
    for (size_t s = 0; s < plan.inputs[i].size(); ++s) {
      if (plan.inputs[i][s].caller_index != int(given)) continue;
      missing = ": extra input " + std::to_string(given) + " is missing, for slot " + std::to_string(s) + " of " +
                ops[i]->describe() + " (op " + std::to_string(i) + ")";
    }
  }
  fail("Sequential: expected ", plan.num_caller_inputs, " extra input(s) for the ops' unbound extra-input slots, got ",
       given, missing.empty() ? ": too many" : missing);
}

}  // namespace

Tensor OperationFuser::run_forward(CallState& state, const Tensor& input, const std::vector<Tensor>& extra_inputs,
                                   std::vector<std::vector<Tensor>>& extra_values) {
  const auto& ops = state.program->ops;
  const ChannelPlan& plan = state.program->plan;
  NoGradGuard no_grad;  // the ops compute untracked; the whole call is one tape node
  Tensor x = input;
  const IndexedOpList& forward = state.lists->forward;
  for (size_t k = 0; k < forward.ops.size(); ++k) {
    const auto& cover = forward.covers[k];
    TensorLists extra_in(cover.size());
    std::vector<OpContext*> ctxs;
    for (size_t c = 0; c < cover.size(); ++c) {
      ctxs.push_back(&state.ctxs[cover[c]]);
      for (const ExtraInputSource& source : plan.inputs[cover[c]]) {
        const bool inside = source.caller_index < 0 && source.producer.op >= cover.front();  // wired by the op
        extra_in[c].push_back(source.caller_index >= 0 ? extra_inputs[source.caller_index]
                              : inside                 ? Tensor()
                                                       : extra_values[source.producer.op][source.producer.slot]);
      }
    }
    if (forward.ops[k]->is_fused()) {
      // A fused op's kernels read its basic ops' parameters: each is checked as its op's forward
      // would (a weight of another shape would be read out of bounds).
      for (size_t c : cover) ops[c]->check_parameters(x.dtype(), x.device(), x.shape(), "the fused op's input");
    }
    FusedForward result = forward.ops[k]->fuser_forward(ctxs, x, extra_in);
    check_forward_result(result, *forward.ops[k], cover, ops, plan);
    for (size_t c = 0; c < cover.size(); ++c) extra_values[cover[c]] = std::move(result.extra_outputs[c]);
    x = result.output;
  }
  return x;
}

SequentialOutput OperationFuser::run(const Tensor& input, const std::vector<Tensor>& extra_inputs, bool training,
                                     bool fuse, const std::vector<std::shared_ptr<const CallArgs>>& call_args) {
  const auto& ops = program_->ops;
  const ChannelPlan& plan = program_->plan;
  check(input.defined(), "Sequential: undefined input");
  check_extra_input_count(plan, ops, extra_inputs.size());
  std::vector<Tensor> node_inputs{input};
  node_inputs.insert(node_inputs.end(), extra_inputs.begin(), extra_inputs.end());
  for (const auto& op : ops) {
    for (size_t k = 0; k < op->parameters().size(); ++k) {
      if (!op->parameters()[k].defined()) {
        fail(op->describe(), ": parameter ", op->parameter_names()[k], " is undefined");
      }
    }
    node_inputs.insert(node_inputs.end(), op->parameters().begin(), op->parameters().end());
  }
  const bool record = should_record(node_inputs);

  auto state = std::make_shared<CallState>();
  state->program = program_;
  if (record) {
    for (const auto& op : ops) {
      for (const Tensor& p : op->parameters()) state->parameters.push_back({p, p.shape(), p.dtype(), p.device()});
    }
  }
  state->dtype = compute_dtype(ops, input);
  state->device = input.device();
  state->lists = lists({state->device, state->dtype, training, record}, fuse);
  state->ctxs.resize(ops.size());
  set_grad_requirements(state->ctxs, state->extra_inputs_require_grad, ops, plan, input, extra_inputs, record,
                        training);
  for (size_t i = 0; i < call_args.size(); ++i) state->ctxs[i].call_args = call_args[i];

  std::vector<std::vector<Tensor>> extra_values(ops.size());
  const Tensor y = run_forward(*state, input, extra_inputs, extra_values);

  // Fresh tensors for the caller: the tape marks them, never the ops' inputs they may alias.
  SequentialOutput out{y.detach(), {}};
  for (size_t i = 0; i < ops.size(); ++i) {
    for (int s = 0; s < ops[i]->num_extra_outputs(); ++s) {
      if (plan.output_caller_index[i][s] >= 0) out.extra_outputs.push_back(extra_values[i][s].detach());
    }
  }
  if (record) {
    {
      std::lock_guard<std::mutex> lock(cache_mutex_);
      last_call_ = state;
    }
    std::vector<Tensor> node_outputs{out.output};
    node_outputs.insert(node_outputs.end(), out.extra_outputs.begin(), out.extra_outputs.end());
    state->output_shape = out.output.shape();
    record_node("Sequential", node_inputs, node_outputs,
                [state](const std::vector<Tensor>& grads, const std::vector<bool>&, const EmitGrad& emit,
                        bool retain_graph) { return backward(*state, grads, emit, retain_graph); });
  }
  return out;
}

namespace {

// A parameter replaced or converted between a forward and its backward would be read by the ops'
// backwards in place of the one the forward read (out of bounds where its shape changed), and its
// grad given to the old tensor.
void check_parameters_unchanged(const std::vector<std::shared_ptr<BasicOp>>& ops,
                                const std::vector<ParameterAtForward>& at_forward) {
  size_t next = 0;
  for (const auto& op : ops) {
    for (size_t k = 0; k < op->parameters().size(); ++k) {
      const Tensor& now = op->parameters()[k];
      const ParameterAtForward& was = at_forward.at(next++);
      if (now.defined() && now.same(was.tensor) && now.shape() == was.shape && now.dtype() == was.dtype &&
          now.device() == was.device) {
        continue;
      }
      fail(op->describe(), ": parameter ", op->parameter_names()[k], " was replaced or converted between the forward (",
           was.shape, " ", was.dtype, " on ", was.device, ") and its backward; change parameters between steps");
    }
  }
}

}  // namespace

std::vector<Tensor> OperationFuser::backward(CallState& state, const std::vector<Tensor>& grads, const EmitGrad& emit,
                                             bool retain_graph) {
  const auto& ops = state.program->ops;
  const ChannelPlan& plan = state.program->plan;
  check_parameters_unchanged(ops, state.parameters);
  // The node's inputs: the input, the caller's extra inputs, then every op's parameters. Parameter
  // grads are emitted as soon as their op has run, so data-parallel reduction can start early.
  std::vector<size_t> param_offset(ops.size());
  size_t num_inputs = 1 + plan.num_caller_inputs;
  for (size_t i = 0; i < ops.size(); ++i) {
    param_offset[i] = num_inputs;
    num_inputs += ops[i]->parameters().size();
  }
  std::vector<Tensor> input_grads(num_inputs);

  // Grads of every extra output: from the caller, then summed from the channel consumers.
  std::vector<std::vector<Tensor>> extra_output_grads(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    extra_output_grads[i].resize(ops[i]->num_extra_outputs());
    for (int s = 0; s < ops[i]->num_extra_outputs(); ++s) {
      const int caller = plan.output_caller_index[i][s];
      if (caller >= 0) extra_output_grads[i][s] = grads[1 + caller];
    }
  }

  const IndexedOpList& backward = state.lists->backward;
  Tensor dy = grads[0].defined() ? grads[0] : zeros(state.output_shape, state.dtype, state.device);
  bool reached_input = true;
  for (size_t k = backward.ops.size(); k-- > 0;) {
    const auto& cover = backward.covers[k];
    std::vector<OpContext*> ctxs;
    for (size_t i : cover) ctxs.push_back(&state.ctxs[i]);
    if (!any_requires_backward(ctxs)) {  // nothing earlier needs a grad either
      reached_input = false;
      break;
    }
    // Undefined where no consumer produced a grad: zero, which the op takes as such.
    TensorLists grad_extra_outputs(cover.size());
    for (size_t c = 0; c < cover.size(); ++c) grad_extra_outputs[c] = extra_output_grads[cover[c]];

    FusedBackward result = backward.ops[k]->fuser_backward(ctxs, dy, grad_extra_outputs);
    check_backward_result(result, *backward.ops[k], cover, ops, state.ctxs[cover.front()].input_requires_grad);
    check_required_grads_defined(result, backward.ops[k]->describe(), cover, ops, plan, state.ctxs,
                                 state.extra_inputs_require_grad);
    for (size_t c = 0; c < cover.size(); ++c) {
      const size_t i = cover[c];
      for (size_t p = 0; p < result.grad_params[c].size(); ++p) emit(param_offset[i] + p, result.grad_params[c][p]);
      for (int s = 0; s < ops[i]->num_extra_inputs(); ++s) {
        const ExtraInputSource& source = plan.inputs[i][s];
        const Tensor& g = result.grad_extra_inputs[c][s];
        if (source.caller_index >= 0) {
          math::accumulate(input_grads[1 + source.caller_index], g);
        } else if (source.producer.op < cover.front()) {  // a producer inside this op is wired by it
          math::accumulate(extra_output_grads[source.producer.op][source.producer.slot], g);
        }
      }
      if (!retain_graph) state.ctxs[i].clear_saved();  // free what forward saved as soon as it has been used
    }
    dy = result.grad_input;
  }
  input_grads[0] = reached_input ? dy : Tensor();
  if (!retain_graph) state.ctxs.clear();
  return input_grads;
}

}  // namespace fuselab
