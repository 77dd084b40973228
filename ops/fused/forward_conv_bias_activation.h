// ForwardConvBiasActivation: Conv2d, ChannelBias and an optional ReLU/GELU/SiLU in one forward call.
//   pre = conv(x, w) + b[k],  y = act(pre)
// CPU: each image's bias and activation run right after its GEMM, while its output is still in
// cache, instead of two more passes over the whole output (kernels/conv2d.h).
// CUDA: with ReLU, one cuDNN call (cudnnConvolutionBiasActivationForward); otherwise cuDNN's
// convolution, then one kernel for bias and activation. Fills Conv2dSaved {x, w} and
// ActivationSaved {pre}, or {y} for ReLU (see ActivationSaved).
#pragma once

#include "ops/fused_op.h"
#include "ops/fusion.h"

namespace fuselab {

class ForwardConvBiasActivation : public FusedOp {
 public:
  // ops: Conv2d, ChannelBias[, ActivationOp]
  explicit ForwardConvBiasActivation(const OpList& ops);
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                             const TensorLists& extra_inputs) override;
};

// The fusion that makes it: its pattern, with the reason for each predicate, and its example model.
FusionDefinition forward_conv_bias_activation_fusion();

}  // namespace fuselab
