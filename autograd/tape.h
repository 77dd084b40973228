// Reverse-mode autograd over a graph of recorded calls that lives as long as its tensors.
//
// Each differentiable call that runs with grad mode on, and has an input that requires grad,
// records one node: its backward function (which captures what the call saved), where each input's
// grad goes (a leaf's grad() or the node that produced that input) and its place in recording
// order. Each output holds its node, and a node holds the nodes of its inputs, never its own
// outputs: a graph, saved tensors and all, is freed when the last tensor that can reach it dies. A
// forward run under grad mode and never backpropagated (a validation loss) costs nothing once its
// outputs are gone.
//
// backward(root) runs the nodes root can reach, newest first (a node's consumers were recorded
// after it, so this is a reverse topological order, and always the same one), routes each input
// grad to its leaf's grad() or to its producer, and frees each node's saved state as soon as it has
// run. Nodes root cannot reach, such as another loss's graph recorded in between, are left as they
// are for their own backward(). With retain_graph the saved state stays, and another backward()
// through the same nodes accumulates into the leaves' grads again; without it, that backward()
// throws naming the op whose saved state was freed.
//
// A leaf's grad is final once every node that takes the leaf as an input, and that root can reach,
// has run. backward() can report that moment per leaf (LeafGradReadyFn): data-parallel training
// starts reducing a parameter's grad there, while the rest of backward still runs. A node may hand
// over some input grads before it returns (EmitGrad), as the fused Sequential node does for each
// parameter as soon as its op's backward has run.
//
// Every grad has the shape of the tensor it is the grad of: a backward is handed its outputs'
// grads in full and returns its inputs' grads in full (the grad of sum(x) is one fill of x's shape).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace fuselab {

// Given the grads of a node's outputs (undefined = zero) and which inputs need a grad, returns
// one grad per input (undefined where none is needed).
using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs,
                                                     const std::vector<bool>& input_needs_grad)>;

// Hands over the grad of input `input` while the node's backward still runs; the node then
// returns an undefined grad for that input.
using EmitGrad = std::function<void(size_t input, const Tensor& grad)>;
// As BackwardFn, streaming some grads through `emit`. A backward that frees parts of its saved
// state while it runs must keep them when `retain_graph` is set: it will be called again.
using StreamingBackwardFn =
    std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs, const std::vector<bool>& input_needs_grad,
                                      const EmitGrad& emit, bool retain_graph)>;

// Called once for each leaf a backward() reaches, as soon as its grad is final. The leaf's grad()
// is undefined when no path from the root produced one.
using LeafGradReadyFn = std::function<void(const Tensor& leaf)>;

struct BackwardOptions {
  // Keep the saved state of every node run, for another backward() through the same graph.
  bool retain_graph = false;
  LeafGradReadyFn on_leaf_ready;
};

// Runs backward from `root`; `grad_root` may be omitted when root has one element.
void backward(const Tensor& root, const Tensor& grad_root = Tensor(), const BackwardOptions& options = {});
// The same with only on_leaf_ready set.
void backward(const Tensor& root, const Tensor& grad_root, const LeafGradReadyFn& on_leaf_ready);

// True when grad mode is on and one of `inputs` requires grad: the call must be recorded.
bool should_record(const std::vector<Tensor>& inputs);

// Records a single-output call when should_record(inputs); returns output.
Tensor record(std::string op, const std::vector<Tensor>& inputs, Tensor output, BackwardFn backward);

// Records one call whose outputs are `outputs` (fresh tensors; undefined ones are skipped): they
// become non-leaf tensors that require grad. The caller has checked should_record(inputs).
void record_node(std::string op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                 StreamingBackwardFn backward);

// The grad of `leaf` where a backward may add its contribution into it in place, else undefined:
// a leaf whose grad nothing else can see (no other handle to it or to its storage; a grad the user
// kept a handle to is left as it was, and the sum is a new tensor). Gradient accumulation over
// micro-batches uses it: the Linear ops' weight-grad GEMMs add into it with beta = 1 instead of a
// GEMM and a separate pass. Handing it out marks the leaf (TensorImpl::grad_added_in_place); a
// backward that added into it returns that very tensor as the leaf's grad, and backward() takes
// it as accumulated and clears the mark. Any other grad for the leaf, its own grad passed back as
// a gradient included, is added as usual. A backward() clears the marks of the leaves it reaches
// when it starts and when it ends, so a mark made in one pass (or outside any) never counts in
// another.
Tensor grad_to_accumulate_into(const Tensor& leaf);

// The ops of the nodes a backward(root) would run, in the order it would run them (none for a
// leaf): to see what a forward recorded.
std::vector<std::string> graph_ops(const Tensor& root);

}  // namespace fuselab
