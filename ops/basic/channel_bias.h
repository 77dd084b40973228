// ChannelBias: one bias per channel of an [N, C, ...] tensor (the bias after a Conv2d):
//   y[n, c, i] = x[n, c, i] + b[c],   dx = dy,   db[c] = sum_{n, i} dy[n, c, i]
// Kernels: kernels/channel_bias.h.
#pragma once

#include "ops/basic_op.h"
#include "tensor/random.h"

namespace fuselab {

class ChannelBias : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  // b = 0, or b ~ U(-init_bound, init_bound) when init_bound > 0.
  explicit ChannelBias(int64_t channels, double init_bound = 0, Generator* gen = nullptr);
  int64_t channels() const { return channels_; }
  Tensor& bias() { return parameter(0); }

  // Throws naming the op unless x is [N, channels, ...].
  void check_channels(const Tensor& x) const;

  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

 private:
  int64_t channels_;
};

}  // namespace fuselab
