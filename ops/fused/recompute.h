// Recompute: activation recomputation (checkpointing) as a joint fusion. A run of ops is computed
// in forward without keeping what their backwards read; only the run's input (and any extra input
// it takes from outside) is saved, in RecomputeSaved in the first op's context. Backward runs the
// ops' forwards again, this time saving, then their backwards in reverse: the run's activations
// live only while its backward runs, for one more forward of the run.
//
// Registered after the built-in joint fusions, it wraps what they made: a FlashAttention inside a
// recomputed branch is recomputed as FlashAttention (its kernel, not the basic attention ops). The
// run's ops are otherwise the basic ops they are, so grads are the un-recomputed ones exactly.
// Channels inside the run (the residual from MakeExtraOutput to AddExtraInput, qkv, a router's
// routing) are wired by the run itself, by channel name. Which runs it takes is a choice, as llm.c's -r:
//   RecomputeMLP     the MLP branch: every run of plain ops holding an activation or GLU
//   RecomputeNorms   each norm with the Linear it feeds (the norm's output is not kept)
//   RecomputeBlock   every residual branch: from an op that opens a channel to the last op reading
//                    a channel opened inside it (a transformer block's attention branch and its MLP
//                    branch), keeping only the residual stream
// A plain op takes no extra inputs and makes no extra outputs. No run holds a Dropout that drops
// in this mode: its mask would be drawn again.
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
  TensorLists extra_inputs;  // those from outside the run; undefined where the run wires its own
  NamedTensors tensors() const;
};

class Recompute : public FusedOp {
 public:
  // `run`: basic ops and joint fused ops, consecutive.
  explicit Recompute(const OpList& run);
  std::string describe() const override;
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                             const TensorLists& extra_inputs) override;
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                               const TensorLists& grad_extra_outputs) override;

 private:
  struct Slot {
    size_t op;
    int slot;
  };
  OpList run_;
  std::vector<size_t> first_;  // run_[k] covers basic ops [first_[k], first_[k + 1])
  // [basic op][extra-input slot]: the extra output inside the run it reads, if any
  std::vector<std::vector<std::optional<Slot>>> producer_;

  FusedForward run_forward(const std::vector<OpContext*>& ctxs, const Tensor& x, const TensorLists& extra_inputs);
};

enum class RecomputeScope { MLP, Norms, Block };

// "none", "mlp", "norms", "block" (a program's flag); throws fuselab::Error on another word.
std::optional<RecomputeScope> parse_recompute_scope(const std::string& word);

// The fusion for a scope: its name (RecomputeMLP, ...), its function and its example model.
FusionDefinition recompute_fusion(RecomputeScope scope);

}  // namespace fuselab
