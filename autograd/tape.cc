#include "autograd/tape.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "autograd/grad_mode.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {

struct GradNode;

// Where an input's grad goes: a leaf's grad(), or output `output` of the node that produced it.
struct GradSink {
  std::shared_ptr<TensorImpl> leaf;
  std::shared_ptr<GradNode> producer;
  size_t output = 0;
  Shape shape;
  bool needs_grad = false;
};

struct GradNode {
  std::string op;
  uint64_t sequence = 0;  // recording order: every node is recorded after its inputs' producers
  std::vector<GradSink> inputs;
  std::vector<Shape> output_shapes;
  StreamingBackwardFn backward;  // empty once its saved state is freed
  ~GradNode();
};

// Which output of which node a non-leaf tensor is.
struct AutogradMeta {
  std::shared_ptr<GradNode> node;
  size_t output;
};

namespace {

thread_local bool grad_enabled = true;

// The nodes an outer ~GradNode on this thread is releasing one at a time (null when none is).
thread_local std::vector<std::shared_ptr<GradNode>>* nodes_being_released = nullptr;

// a + b in a new tensor, in one pass; both have the same shape, dtype and device.
Tensor sum_of(const Tensor& a, const Tensor& b) { return math::binary(math::BinaryOp::Add, a, b); }

// Whether no other tensor can see `t`'s memory: one handle to it, the only one on its storage.
// The caller's own handle is the one; it is dropped once the grad is routed.
bool sole_owner(const Tensor& t) { return t.impl_ptr().use_count() == 1 && t.impl().storage.use_count() == 1; }

// A leaf's grad is the user's to modify in place, so it never aliases a grad another tensor holds:
// the update is copied unless nothing else can see it (a grad a backward returned and nothing else
// holds, such as a weight grad fresh from its GEMM). An update that is the grad itself, on a leaf
// marked by grad_to_accumulate_into, was added into it in place already.
void accumulate_leaf(TensorImpl& leaf, const Tensor& update) {
  std::shared_ptr<TensorImpl>& grad = leaf.grad;
  if (leaf.grad_added_in_place && grad == update.impl_ptr()) {
    leaf.grad_added_in_place = false;
    return;
  }
  if (grad) grad = sum_of(Tensor(grad), update).impl_ptr();
  else grad = sole_owner(update) ? update.impl_ptr() : update.clone().impl_ptr();
}

// Grads in flight are never modified in place, so the first one can be kept without a copy.
void accumulate_pending(std::shared_ptr<TensorImpl>& grad, const Tensor& update) {
  grad = grad ? sum_of(Tensor(grad), update).impl_ptr() : update.impl_ptr();
}

}  // namespace

Tensor grad_to_accumulate_into(const Tensor& leaf) {
  if (!leaf.defined() || !leaf.is_leaf()) return Tensor();
  const std::shared_ptr<TensorImpl>& grad = leaf.impl().grad;
  const bool unseen = grad && grad.use_count() == 1 && grad->storage.use_count() == 1;
  if (!unseen) return Tensor();
  leaf.impl().grad_added_in_place = true;
  return Tensor(grad);
}

bool is_grad_enabled() { return grad_enabled; }
void set_grad_enabled(bool enabled) { grad_enabled = enabled; }

// Releasing a node releases its producers, and theirs: done by recursion, a long chain would
// overflow the stack. So the outermost ~GradNode on the thread collects the producers that nested
// ones let go of and releases them one at a time. The saved state goes first, as it may hold
// producers too (a saved input), which the list keeps until their turn.
GradNode::~GradNode() {
  std::vector<std::shared_ptr<GradNode>> own;
  const bool outermost = nodes_being_released == nullptr;
  if (outermost) nodes_being_released = &own;
  for (GradSink& sink : inputs) {
    if (sink.producer) nodes_being_released->push_back(std::move(sink.producer));
  }
  backward = nullptr;
  if (!outermost) return;
  while (!own.empty()) {
    std::shared_ptr<GradNode> next = std::move(own.back());
    own.pop_back();
    next.reset();  // when it was the last owner, its ~GradNode appends to `own`
  }
  nodes_being_released = nullptr;
}

void record_node(std::string op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                 StreamingBackwardFn backward) {
  static std::atomic<uint64_t> next_sequence{0};
  auto node = std::make_shared<GradNode>();
  node->op = std::move(op);
  node->sequence = next_sequence.fetch_add(1, std::memory_order_relaxed);
  node->backward = std::move(backward);
  node->inputs.resize(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    GradSink& sink = node->inputs[k];
    if (!inputs[k].defined()) continue;
    sink.needs_grad = inputs[k].requires_grad();
    sink.shape = inputs[k].shape();
    if (!sink.needs_grad) continue;
    if (inputs[k].is_leaf()) {
      sink.leaf = inputs[k].impl_ptr();
    } else {
      sink.producer = inputs[k].impl().autograd_meta->node;
      sink.output = inputs[k].impl().autograd_meta->output;
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined()) {
      node->output_shapes.emplace_back();
      continue;
    }
    TensorImpl& impl = outputs[i].impl();
    // An output that is an input (or another call's output) would make the graph own itself.
    check(!impl.autograd_meta && !impl.requires_grad, node->op, ": output ", i, " of shape ", impl.shape,
          " already requires grad; a recorded call must return fresh tensors");
    impl.requires_grad = is_floating(impl.dtype);
    impl.autograd_meta = std::make_shared<AutogradMeta>(AutogradMeta{node, i});
    node->output_shapes.push_back(impl.shape);
  }
}

namespace {

// One backward pass: the nodes root reaches, in the order they run (newest first), the grads
// waiting for each one's outputs, and how many of them may still add to each leaf's grad (to
// report the leaf as ready when that reaches zero).
class GradRouter {
 public:
  GradRouter(GradNode& root, const LeafGradReadyFn& on_leaf_ready) : on_leaf_ready_(on_leaf_ready) {
    collect(root);
    std::sort(nodes_.begin(), nodes_.end(), [](const GradNode* a, const GradNode* b) { return a->sequence > b->sequence; });
    pending_.resize(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      index_[nodes_[i]] = i;
      for (const GradSink& sink : nodes_[i]->inputs) {
        if (sink.leaf && on_leaf_ready_) ++remaining_[sink.leaf.get()];
      }
    }
  }

  size_t size() const { return nodes_.size(); }
  GradNode& node(size_t i) const { return *nodes_[i]; }

  std::vector<std::shared_ptr<TensorImpl>>& pending(size_t i) {
    pending_[i].resize(nodes_[i]->output_shapes.size());
    return pending_[i];
  }
  std::vector<std::shared_ptr<TensorImpl>>& pending(const GradNode& node) { return pending(index_.at(&node)); }
  bool has_pending(size_t i) const { return !pending_[i].empty(); }

  // Routes the grad of input k of node i (undefined = none) and counts the leaf's contribution.
  void route(size_t i, size_t k, const Tensor& grad) {
    const GradNode& n = *nodes_[i];
    const GradSink& sink = n.inputs[k];
    if (!sink.needs_grad) return;
    if (grad.defined()) {
      check(grad.shape() == sink.shape, n.op, " backward: grad of input ", k, " has shape ", grad.shape(),
            ", expected ", sink.shape);
      if (sink.leaf) accumulate_leaf(*sink.leaf, grad);
      else accumulate_pending(pending(*sink.producer)[sink.output], grad);
    }
    if (sink.leaf && on_leaf_ready_ && --remaining_[sink.leaf.get()] == 0) on_leaf_ready_(Tensor(sink.leaf));
  }

  // Clears the marks grad_to_accumulate_into leaves on the leaves this pass reaches (autograd/tape.h).
  void clear_in_place_marks() const {
    for (const GradNode* node : nodes_) {
      for (const GradSink& sink : node->inputs) {
        if (sink.leaf) sink.leaf->grad_added_in_place = false;
      }
    }
  }

  // A node that gets no grad contributes none to its inputs.
  void skip(size_t i) {
    for (size_t k = 0; k < nodes_[i]->inputs.size(); ++k) route(i, k, Tensor());
  }

 private:
  // Every node reachable from root, each once, without recursion (graphs can be deep).
  void collect(GradNode& root) {
    std::vector<GradNode*> stack{&root};
    index_[&root] = 0;
    while (!stack.empty()) {
      GradNode* node = stack.back();
      stack.pop_back();
      nodes_.push_back(node);
      for (const GradSink& sink : node->inputs) {
        if (sink.producer && index_.emplace(sink.producer.get(), 0).second) stack.push_back(sink.producer.get());
      }
    }
  }

  std::vector<GradNode*> nodes_;
  std::unordered_map<const GradNode*, size_t> index_;
  std::vector<std::vector<std::shared_ptr<TensorImpl>>> pending_;
  const LeafGradReadyFn on_leaf_ready_;
  std::unordered_map<const TensorImpl*, size_t> remaining_;
};

// Checked for every node before any runs, so that a refused backward() changes no grad.
void check_not_freed(const GradNode& node) {
  if (node.backward) return;
  std::ostringstream outputs;
  for (const Shape& shape : node.output_shapes) outputs << " " << shape;
  throw Error("backward: " + node.op + " (outputs of shape" + outputs.str() +
              ") already ran in an earlier backward(), which freed its saved state; pass retain_graph to that"
              " backward() to run through the graph again");
}

// Runs node i of the pass with the grads its outputs received, and routes the grads it gives.
void run_node(GradRouter& router, size_t i, bool retain_graph) {
  GradNode& node = router.node(i);
  if (!router.has_pending(i)) return router.skip(i);
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
  std::vector<Tensor> grads = node.backward(grad_outputs, needs, emit, retain_graph);
  if (!retain_graph) node.backward = nullptr;  // frees what the call saved
  check(grads.size() == node.inputs.size(), node.op, " backward returned ", grads.size(), " grads for ",
        node.inputs.size(), " inputs");
  // Each grad is let go of once routed, so that of leaves given the same fresh tensor (x and r of
  // a fused x + r) the last one takes it without a copy.
  for (size_t k = 0; k < grads.size(); ++k) {
    if (!emitted[k]) router.route(i, k, grads[k]);
    grads[k] = Tensor();
  }
}

}  // namespace

void backward(const Tensor& root, const Tensor& grad_root, const BackwardOptions& options) {
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
    root.impl().grad_added_in_place = false;  // no backward ran to add into it
    accumulate_leaf(root.impl(), seed);
    if (options.on_leaf_ready) options.on_leaf_ready(root);
    return;
  }
  const AutogradMeta& root_meta = *root.impl().autograd_meta;
  GradRouter router(*root_meta.node, options.on_leaf_ready);
  // Marks count only for the pass that makes them: one left by an earlier pass that threw, or by a
  // call outside any, must not make this pass drop a grad.
  struct InPlaceMarksOfThisPass {
    const GradRouter& router;
    explicit InPlaceMarksOfThisPass(const GradRouter& r) : router(r) { router.clear_in_place_marks(); }
    ~InPlaceMarksOfThisPass() { router.clear_in_place_marks(); }
  } marks(router);
  for (size_t i = 0; i < router.size(); ++i) check_not_freed(router.node(i));
  router.pending(*root_meta.node)[root_meta.output] = seed.impl_ptr();
  for (size_t i = 0; i < router.size(); ++i) run_node(router, i, options.retain_graph);
}

void backward(const Tensor& root, const Tensor& grad_root, const LeafGradReadyFn& on_leaf_ready) {
  backward(root, grad_root, BackwardOptions{false, on_leaf_ready});
}

std::vector<std::string> graph_ops(const Tensor& root) {
  std::vector<std::string> ops;
  if (!root.defined() || root.is_leaf()) return ops;
  const GradRouter router(*root.impl().autograd_meta->node, {});
  for (size_t i = 0; i < router.size(); ++i) ops.push_back(router.node(i).op);
  return ops;
}

bool should_record(const std::vector<Tensor>& inputs) {
  if (!is_grad_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

Tensor record(std::string op, const std::vector<Tensor>& inputs, Tensor output, BackwardFn backward) {
  if (!should_record(inputs)) return output;
  record_node(std::move(op), inputs, {output},
              [backward = std::move(backward)](const std::vector<Tensor>& grads, const std::vector<bool>& needs,
                                               const EmitGrad&, bool) { return backward(grads, needs); });
  return output;
}

}  // namespace fuselab
