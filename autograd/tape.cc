#include "autograd/tape.h"

#include <atomic>
#include <unordered_map>

#include "autograd/grad_mode.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {
namespace {

thread_local bool grad_enabled = true;
thread_local Tape* installed_tape = nullptr;

// a + b in a new tensor, in one pass; both have the same shape, dtype and device.
Tensor sum_of(const Tensor& a, const Tensor& b) { return math::binary(math::BinaryOp::Add, a, b); }

// Whether no other tensor can see `t`'s memory: one handle to it, the only one on its storage.
// The caller's own handle is the one; it is dropped once the grad is routed.
bool sole_owner(const Tensor& t) { return t.impl_ptr().use_count() == 1 && t.impl().storage.use_count() == 1; }

// A leaf's grad is the user's to modify in place, so it never aliases a grad another tensor holds:
// the update is copied unless nothing else can see it (a weight grad fresh from its GEMM).
void accumulate_leaf(std::shared_ptr<TensorImpl>& grad, const Tensor& update) {
  if (grad) grad = sum_of(Tensor(grad), update).impl_ptr();
  else grad = sole_owner(update) ? update.impl_ptr() : update.clone().impl_ptr();
}

// Grads in flight are never modified in place, so the first one can be kept without a copy.
void accumulate_pending(std::shared_ptr<TensorImpl>& grad, const Tensor& update) {
  grad = grad ? sum_of(Tensor(grad), update).impl_ptr() : update.impl_ptr();
}

}  // namespace

bool is_grad_enabled() { return grad_enabled; }
void set_grad_enabled(bool enabled) { grad_enabled = enabled; }

Tape::Tape() {
  static std::atomic<uint64_t> next_id{1};
  id_ = next_id++;
}

Tape& current_tape() {
  thread_local Tape thread_tape;
  return installed_tape ? *installed_tape : thread_tape;
}

TapeScope::TapeScope(Tape& tape) : previous_(installed_tape) { installed_tape = &tape; }
TapeScope::~TapeScope() { installed_tape = previous_; }

void Tape::check_same_graph(const std::string& op, const Tensor& t) const {
  const AutogradMeta* meta = t.impl().autograd_meta.get();
  if (!meta) return;
  check(meta->tape_id == id_, op, ": a tensor of shape ", t.shape(), " was recorded on another tape");
  check(meta->generation == generation_, op, ": a tensor of shape ", t.shape(),
        " belongs to a graph that an earlier backward() already freed");
}

void Tape::record(std::string op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                  BackwardFn backward) {
  record(std::move(op), inputs, outputs,
         [backward = std::move(backward)](const std::vector<Tensor>& grads, const std::vector<bool>& needs,
                                          const EmitGrad&) { return backward(grads, needs); });
}

void Tape::record(std::string op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                  StreamingBackwardFn backward) {
  Node node{std::move(op), {}, {}, std::move(backward)};
  for (const Tensor& input : inputs) {
    GradSink sink;
    if (input.defined()) {
      check_same_graph(node.op, input);
      sink.needs_grad = input.requires_grad();
      sink.shape = input.shape();
      if (sink.needs_grad) {
        if (input.is_leaf()) sink.leaf = input.impl_ptr();
        else sink.meta = input.impl().autograd_meta;
      }
    }
    node.inputs.push_back(std::move(sink));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined()) {
      node.output_shapes.emplace_back();
      continue;
    }
    TensorImpl& impl = outputs[i].impl();
    check(!impl.autograd_meta, node.op, ": output ", i, " was already recorded by another call");
    impl.requires_grad = is_floating(impl.dtype);
    impl.autograd_meta = std::make_shared<AutogradMeta>(AutogradMeta{id_, generation_, nodes_.size(), i});
    node.output_shapes.push_back(impl.shape);
  }
  nodes_.push_back(std::move(node));
}

void Tape::clear() {
  nodes_.clear();
  ++generation_;
}

// One backward pass's bookkeeping: the grads waiting for each node's outputs, and how many
// nodes may still add to each leaf's grad (to report the leaf as ready when that reaches zero).
class Tape::GradRouter {
 public:
  GradRouter(std::vector<Node>& nodes, size_t root_node, const LeafGradReadyFn& on_leaf_ready)
      : nodes_(nodes), pending_(nodes.size()), on_leaf_ready_(on_leaf_ready) {
    if (!on_leaf_ready_) return;
    for (size_t i = 0; i <= root_node; ++i) {
      for (const GradSink& sink : nodes[i].inputs) {
        if (sink.leaf) ++remaining_[sink.leaf.get()];
      }
    }
  }

  std::vector<std::shared_ptr<TensorImpl>>& pending(size_t node) {
    pending_[node].resize(nodes_[node].output_shapes.size());
    return pending_[node];
  }
  bool has_pending(size_t node) const { return !pending_[node].empty(); }

  // Routes the grad of input k of node `node` (undefined = none) and counts the leaf's contribution.
  void route(size_t node, size_t k, const Tensor& grad) {
    const Node& n = nodes_[node];
    const GradSink& sink = n.inputs[k];
    if (!sink.needs_grad) return;
    if (grad.defined()) {
      check(grad.shape() == sink.shape, n.op, " backward: grad of input ", k, " has shape ", grad.shape(),
            ", expected ", sink.shape);
      if (sink.leaf) accumulate_leaf(sink.leaf->grad, grad);
      else accumulate_pending(pending(sink.meta->node)[sink.meta->output], grad);
    }
    if (sink.leaf && on_leaf_ready_ && --remaining_[sink.leaf.get()] == 0) on_leaf_ready_(Tensor(sink.leaf));
  }

  // A node that gets no grad contributes none to its inputs.
  void skip(size_t node) {
    for (size_t k = 0; k < nodes_[node].inputs.size(); ++k) route(node, k, Tensor());
  }

 private:
  std::vector<Node>& nodes_;
  std::vector<std::vector<std::shared_ptr<TensorImpl>>> pending_;
  const LeafGradReadyFn& on_leaf_ready_;
  std::unordered_map<const TensorImpl*, size_t> remaining_;
};

void Tape::backward(const Tensor& root, const Tensor& grad_root, const LeafGradReadyFn& on_leaf_ready) {
  check(root.defined() && root.requires_grad(), "backward: the tensor",
        root.defined() ? " of shape " : "", root.defined() ? root.shape() : Shape{},
        " does not require grad (no input of the calls that made it requires grad)");
  Tensor seed = grad_root;
  if (!seed.defined()) {
    check(root.numel() == 1, "backward: the root has shape ", root.shape(),
          "; backward on a non-scalar needs a gradient of the same shape");
    seed = ones(root.shape(), root.dtype(), root.device());
  }
  check(seed.shape() == root.shape() && seed.dtype() == root.dtype(), "backward: gradient of shape ",
        seed.shape(), " ", seed.dtype(), " for a root of shape ", root.shape(), " ", root.dtype());
  if (root.is_leaf()) {
    accumulate_leaf(root.impl().grad, seed);
    if (on_leaf_ready) on_leaf_ready(root);
    return;
  }
  check_same_graph("backward", root);

  const AutogradMeta& root_meta = *root.impl().autograd_meta;
  GradRouter router(nodes_, root_meta.node, on_leaf_ready);
  router.pending(root_meta.node)[root_meta.output] = seed.impl_ptr();

  for (size_t i = root_meta.node + 1; i-- > 0;) {
    Node& node = nodes_[i];
    if (!router.has_pending(i)) {
      router.skip(i);
      continue;
    }
    std::vector<Tensor> grad_outputs(node.output_shapes.size());
    for (size_t o = 0; o < grad_outputs.size(); ++o) grad_outputs[o] = Tensor(router.pending(i)[o]);
    router.pending(i).clear();
    std::vector<bool> needs(node.inputs.size()), emitted(node.inputs.size(), false);
    for (size_t k = 0; k < needs.size(); ++k) needs[k] = node.inputs[k].needs_grad;

    const EmitGrad emit = [&](size_t k, const Tensor& grad) {
      check(k < node.inputs.size() && !emitted[k], node.op, " backward emitted input ", k,
            " twice or out of range (", node.inputs.size(), " inputs)");
      emitted[k] = true;
      router.route(i, k, grad);
    };
    std::vector<Tensor> grads = node.backward(grad_outputs, needs, emit);
    node.backward = nullptr;  // frees what the call saved
    check(grads.size() == node.inputs.size(), node.op, " backward returned ", grads.size(),
          " grads for ", node.inputs.size(), " inputs");
    for (size_t k = 0; k < grads.size(); ++k) {
      if (!emitted[k]) router.route(i, k, grads[k]);
    }
  }
  clear();
}

bool should_record(const std::vector<Tensor>& inputs) {
  if (!is_grad_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

Tensor record(std::string op, const std::vector<Tensor>& inputs, Tensor output, BackwardFn backward) {
  if (should_record(inputs)) current_tape().record(std::move(op), inputs, {output}, std::move(backward));
  return output;
}

void backward(const Tensor& root, const Tensor& grad_root, const LeafGradReadyFn& on_leaf_ready) {
  current_tape().backward(root, grad_root, on_leaf_ready);
}

}  // namespace fuselab
