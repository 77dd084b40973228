// Dropout: in training y = x * m / (1 - p) with m ~ Bernoulli(1 - p) from the op's own seeded
// generator; identity in eval.  dx = dy * m / (1 - p)
#pragma once

#include "ops/basic_op.h"
#include "tensor/random.h"

namespace fuselab {

struct DropoutSaved {
  Tensor scaled_mask;  // m / (1 - p)
};

class Dropout : public BasicOp {
 public:
  explicit Dropout(double p, uint64_t seed = 0);
  double p() const { return p_; }

  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

 private:
  double p_;
  Generator gen_;
};

}  // namespace fuselab
