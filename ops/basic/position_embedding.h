// PositionEmbedding: a learned embedding of each position added to the input, as GPT-2's wpe.
// For x [B, T, C] with offset + T <= context and a table P [context, C]:
//   y[b, t] = x[b, t] + P[offset + t],   dx = dy,   dP[offset + t] = sum over b of dy[b, t] (0 elsewhere)
// The offset is the per-call argument "position_offset" (0 when not given): the position of the
// first token, as a KV cache's generation gives it (examples/kv_cache.h).
#pragma once

#include "ops/basic_op.h"
#include "tensor/random.h"

namespace fuselab {

class PositionEmbedding : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }  // tensor_math and views only
  // P ~ N(0, init_std^2), GPT-2's initialization of its position embedding for init_std 0.02.
  PositionEmbedding(int64_t context, int64_t width, double init_std = 0.02, Generator* gen = nullptr);
  int64_t context() const { return context_; }
  int64_t width() const { return width_; }
  Tensor& table() { return parameter(0); }
  std::vector<std::string> call_arg_keys() const override { return {"position_offset"}; }

  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

 private:
  int64_t context_, width_;
};

}  // namespace fuselab
