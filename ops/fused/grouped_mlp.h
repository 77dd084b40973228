// GroupedMlp: a mixture of experts' MLP, GroupedLinear (width -> 2 hidden), a gated linear unit
// (SwiGLU or any of its family) and GroupedLinear (hidden -> width), as one joint forward-backward
// op that keeps only the gate/up product u for backward and recomputes the GLU's output from it
// there, or optionally keeps that too (the unfused ops keep u and the GLU's output for every
// expert). On the CPU each expert runs its whole chain before the next, so the
// GLU's output and the backward's hidden grads live only in a buffer of one expert's rows; on CUDA
// each step runs for all experts at once, as grouped GEMMs (kernels/grouped_mlp.h).
//
// Three fusions make it. `GroupedMlp` takes the three ops. `ScaledGroupedMlp` takes them with the
// scaled GLU (ScaledSwiGLU and its family: each row's output times a scale, the GLU's extra input,
// where TransformerEngine's MoE applies the routing probabilities): the chain multiplies its
// output's rows by the scale, y being linear in the GLU's output, and backward gives the scale's
// grads as the routed chain gives the routing weights'. `RoutedGroupedMlp` takes the three with the
// MoEPermute before and the MoEUnpermute after (ops/basic/moe_permute.h), a whole layer of
// experts: the chain reads each expert's rows straight from x by the copies they are, and in
// backward its output grads from the tokens' grads times the routing weights, and gives the
// weights' grads from its own recomputed a; so neither the permuted copy of x nor the experts'
// outputs are kept for backward, nor their grads written. The weighted sum after the experts and
// the sum of each row's copies' grads before them are the basic ops' kernels (a row's copies come
// from different experts, which run in parallel: summing them in the chain would race).
#pragma once

#include <string>

#include "ops/basic/gated_linear_unit.h"
#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

struct GroupedMlpSaved {
  Tensor input;    // [rows, width]: the experts' rows, or routed the tokens
  Tensor copies;   // routed: int64 [kept], the copy each expert row is (MoEOrder's); else undefined
  Tensor weights;  // routed: the routing weights [tokens, k]; scaled: the scale of each row [rows]; else undefined
  Tensor pre;      // u [kept, 2 hidden]
  Tensor act;      // a [kept, hidden], or undefined where backward recomputes it from u
  Tensor up_weight, down_weight;
  std::vector<int64_t> sizes;
  NamedTensors tensors() const {
    return {{"input", input}, {"copies", copies}, {"weights", weights},       {"pre", pre},
            {"act", act},     {"up_weight", up_weight}, {"down_weight", down_weight}};
  }
};

class GroupedMlp : public FusedOp {
 public:
  // ops: GroupedLinear, GatedLinearUnit or ScaledGatedLinearUnit, GroupedLinear; or MoEPermute,
  // GroupedLinear, GatedLinearUnit, GroupedLinear, MoEUnpermute.
  // With recompute_activation false it keeps the GLU's output a for backward too, as the basic ops
  // do, trading a [kept, hidden] for a GLU pass. `type` is its fusion's name.
  GroupedMlp(const OpList& ops, std::string type, bool recompute_activation);
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                             const TensorLists& extra_inputs) override;
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                               const TensorLists& grad_extra_outputs) override;

 private:
  bool routed() const { return up_ == 1; }
  int64_t top_k() const;  // the copies of each token: MoEPermute's k, or 1
  const ScaledGatedLinearUnit* scaled() const { return scaled_; }
  kernels::Activation gate() const;  // the GLU's
  size_t up_;  // the first GroupedLinear's place: 1 after a MoEPermute, else 0
  bool recompute_activation_;
  const ScaledGatedLinearUnit* scaled_;  // the GLU, where it is the scaled form; else null
};

// The fusions that make it: their patterns, with the reason for each predicate, and their example
// models. The built-in ones recompute the activation; with recompute_activation false they are
// "...KeepingActivation" ("GroupedMlpKeepingActivation" and so on), for a program that would
// rather keep it to register (docs/mixture_of_experts.md).
FusionDefinition routed_grouped_mlp_fusion(bool recompute_activation = true);
FusionDefinition grouped_mlp_fusion(bool recompute_activation = true);
FusionDefinition scaled_grouped_mlp_fusion(bool recompute_activation = true);

}  // namespace fuselab
