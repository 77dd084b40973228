// Recompute: activation recomputation (checkpointing) as a joint fusion. A run of basic ops is
// computed in forward without keeping what their backwards read; only the run's input is saved
// (RecomputeSaved, in the first op's context). Backward runs the ops' forwards again, this time
// saving, then their backwards in reverse: the run's activations live only while its backward
// runs, for one more forward of the run.
//
// The ops run as the basic ops they are (a recomputed run is not fused further), so grads are the
// unfused ones exactly. Which runs it takes is a choice, as llm.c's -r:
//   RecomputeMLP     the MLP branch: every run of recomputable ops holding an activation or GLU
//   RecomputeNorms   each norm with the Linear it feeds (the norm's output is not kept)
//   RecomputeBlock   every run of at least two recomputable ops (the whole block, but for the
//                    attention ops, which read qkv on a channel and keep their own small state)
// A recomputable op takes no extra inputs and makes no extra outputs (a recomputed run starts from
// its input alone) and is not a Dropout (its mask would be drawn again).
//
// These fusions are not built in: a program registers the one it wants, like any user fusion
// (register_forward_backward_fusion(definition.name, definition.fn)), and a Sequential switches it
// off by name like the others.
#pragma once

#include <optional>
#include <string>

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

struct RecomputeSaved {
  Tensor input;
  NamedTensors tensors() const { return {{"input", input}}; }
};

class Recompute : public FusedOp {
 public:
  explicit Recompute(const OpList& ops);
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                             const TensorLists& extra_inputs) override;
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                               const TensorLists& grad_extra_outputs) override;
};

enum class RecomputeScope { MLP, Norms, Block };

// "none", "mlp", "norms", "block" (a program's flag); throws fuselab::Error on another word.
std::optional<RecomputeScope> parse_recompute_scope(const std::string& word);

// The fusion for a scope: its name (RecomputeMLP, ...), its function and its example model.
FusionDefinition recompute_fusion(RecomputeScope scope);

}  // namespace fuselab
