// Dropout: in training y = x * m / (1 - p) with m ~ Bernoulli(1 - p); identity in eval.
//   dx = dy * m / (1 - p)
// Each call draws one seed from the op's own seeded generator, and the mask is a pure function
// of that seed and the element index (kernels/dropout_mask.h): the same on the CPU and on CUDA.
// A call may give the seed itself, the per-call argument "seed" (an integer): that mask is then
// a function of the given seed alone, and the op's generator does not advance.
#pragma once

#include "ops/basic_op.h"
#include "tensor/random.h"

namespace fuselab {

struct DropoutSaved {
  Tensor scaled_mask;  // m / (1 - p)
  NamedTensors tensors() const { return {{"scaled_mask", scaled_mask}}; }
};

class Dropout : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  explicit Dropout(double p, uint64_t seed = 0);
  double p() const { return p_; }
  // Whether a forward in this mode drops anything (training and p > 0), and the seed of this
  // call's mask (kernels/dropout.h), asked once per dropping forward: the per-call "seed" in ctx
  // when given, otherwise the next draw. A fused op that applies the mask itself asks here, so
  // fused and unfused draw the same masks in the same order.
  bool drops(bool training) const { return training && p_ > 0; }
  uint64_t mask_seed(const OpContext& ctx);
  uint64_t draw_seed() { return gen_.next_u64(); }
  std::vector<std::string> call_arg_keys() const override { return {"seed"}; }
  // The generator the masks' seeds come from: a checkpoint saves its state, so a resumed run draws
  // the masks an uninterrupted one would.
  Generator& generator() { return gen_; }

  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

 private:
  double p_;
  Generator gen_;
};

}  // namespace fuselab
