// The tape: reverse-mode autograd as a list of recorded calls.
//
// Each differentiable call that runs with grad mode on, and has an input that requires grad,
// appends one Node holding a backward function (which captures what it saved). backward(loss)
// walks the nodes in reverse recording order, which is a valid reverse topological order,
// routes each input grad either to the node that produced that input or, for a leaf, into its
// grad(), frees each node's saved state as soon as it has run, and clears the tape.
//
// A leaf's grad is final once every node that takes the leaf as an input has run. backward() can
// report that moment per leaf (LeafGradReadyFn): data-parallel training starts reducing a
// parameter's grad there, while the rest of backward still runs. A node may hand over some input
// grads before it returns (EmitGrad), as the fused Sequential node does for each parameter as soon
// as its op's backward has run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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
using StreamingBackwardFn = std::function<std::vector<Tensor>(
    const std::vector<Tensor>& grad_outputs, const std::vector<bool>& input_needs_grad, const EmitGrad& emit)>;

// Called once for each leaf a backward() reaches, as soon as its grad is final. The leaf's grad()
// is undefined when no path from the root produced one.
using LeafGradReadyFn = std::function<void(const Tensor& leaf)>;

// Which recorded output a non-leaf tensor is.
struct AutogradMeta {
  uint64_t tape_id;
  uint64_t generation;  // the tape's generation when recorded; backward() starts a new one
  size_t node;
  size_t output;
};

class Tape {
 public:
  Tape();
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  // Runs backward from `root`; `grad_root` may be omitted when root has one element.
  void backward(const Tensor& root, const Tensor& grad_root = Tensor(), const LeafGradReadyFn& on_leaf_ready = {});
  size_t size() const { return nodes_.size(); }
  void clear();  // drops every node and its saved state

  // Appends a node whose outputs are `outputs`; they become non-leaf tensors that require grad.
  void record(std::string op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
              BackwardFn backward);
  void record(std::string op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
              StreamingBackwardFn backward);

 private:
  // Where an input's grad goes: a leaf's grad() or a recorded node's output.
  struct GradSink {
    std::shared_ptr<TensorImpl> leaf;
    std::shared_ptr<AutogradMeta> meta;
    Shape shape;
    bool needs_grad = false;
  };
  struct Node {
    std::string op;
    std::vector<GradSink> inputs;
    std::vector<Shape> output_shapes;
    StreamingBackwardFn backward;
  };
  class GradRouter;
  void check_same_graph(const std::string& op, const Tensor& t) const;

  uint64_t id_;
  uint64_t generation_ = 0;
  std::vector<Node> nodes_;
};

// The tape calls record on: the thread's own tape, or the one a TapeScope installed.
Tape& current_tape();

class TapeScope {
 public:
  explicit TapeScope(Tape& tape);
  ~TapeScope();
  TapeScope(const TapeScope&) = delete;
  TapeScope& operator=(const TapeScope&) = delete;

 private:
  Tape* previous_;
};

// True when grad mode is on and one of `inputs` requires grad: the call must be recorded.
bool should_record(const std::vector<Tensor>& inputs);

// Records a single-output call on the current tape when should_record(inputs); returns output.
Tensor record(std::string op, const std::vector<Tensor>& inputs, Tensor output, BackwardFn backward);

void backward(const Tensor& root, const Tensor& grad_root = Tensor(), const LeafGradReadyFn& on_leaf_ready = {});

}  // namespace fuselab
