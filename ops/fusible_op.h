// FusibleOp: what the fuser runs. A basic op covers itself; a fused op covers a run of
// consecutive basic ops. Every list below is indexed by the covered basic ops in forward order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/op_context.h"
#include "tensor/tensor.h"

namespace fuselab {

class BasicOp;

using TensorLists = std::vector<std::vector<Tensor>>;  // one list per covered basic op

struct FusedForward {
  Tensor output;
  TensorLists extra_outputs;  // [i] has basic_ops()[i]->num_extra_outputs() entries
};

struct FusedBackward {
  Tensor grad_input;             // undefined when the first op's input needs no grad
  TensorLists grad_extra_inputs;  // [i] has num_extra_inputs() entries
  TensorLists grad_params;        // [i] has parameters().size() entries (undefined = not needed)
};

// The pass a fusion runs in and a fused op implements: forward, backward, or both (a joint op,
// made by a forward-backward fusion, which may save less in forward and recompute in backward).
enum class Pass { Forward, Backward, ForwardBackward };

inline const char* pass_name(Pass pass) {
  switch (pass) {
    case Pass::Forward: return "forward";
    case Pass::Backward: return "backward";
    case Pass::ForwardBackward: return "joint";
  }
  return "?";
}

class FusibleOp {
 public:
  virtual ~FusibleOp() = default;

  virtual bool is_fused() const = 0;
  // The basic ops this op covers, in forward order.
  virtual std::vector<std::shared_ptr<BasicOp>> basic_ops() const = 0;
  virtual bool implements(Pass pass) const = 0;
  // "RMSNorm(norm0)" or "LinearBiasActivation(linear0, bias0, gelu0)".
  virtual std::string describe() const = 0;

  // extra_inputs[i] holds basic op i's extra inputs; a slot bound to a producer inside this
  // same fused op is undefined, and the fused op wires it itself.
  virtual FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& input,
                                     const TensorLists& extra_inputs) = 0;
  // grad_extra_outputs[i] holds the grads of basic op i's extra outputs, undefined (zero) where
  // nothing used that output or its consumer lies inside this same fused op.
  virtual FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& grad_output,
                                       const TensorLists& grad_extra_outputs) = 0;
};

using OpList = std::vector<std::shared_ptr<FusibleOp>>;

}  // namespace fuselab
