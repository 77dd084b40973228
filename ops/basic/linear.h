// Linear: y = x W^T, W of shape [out, in]; no bias (Bias is its own op).
//   dx = dy W,  dW = dy^T x   (x and dy viewed as [rows, in] and [rows, out])
// When W already has a grad that nothing else sees (gradient accumulation over micro-batches),
// the dW GEMM adds into it in place (beta = 1) rather than making a new dW that a second pass adds.
#pragma once

#include "ops/basic_op.h"
#include "tensor/random.h"

namespace fuselab {

struct LinearSaved {
  Tensor input;   // x as the op received it
  Tensor weight;  // W as used by the forward
  NamedTensors tensors() const { return {{"input", input}, {"weight", weight}}; }
};

class Linear : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }  // tensor_math and views only
  // W ~ U(-1/sqrt(in), 1/sqrt(in)), as PyTorch's default.
  Linear(int64_t in_features, int64_t out_features, Generator* gen = nullptr);
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  Tensor& weight() { return parameter(0); }

  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

  // The math, shared with the fused ops that contain a Linear.
  // dx = alpha dy W, of the input's shape (alpha: a scale that followed the Linear, folded in).
  static Tensor input_grad(const Tensor& dy, const Tensor& weight, const Shape& input_shape, double alpha = 1);
  // dW = alpha dy^T x; added into `into` in place and returned as it when `into` is defined and of
  // dW's dtype and device (the weight's grad_to_accumulate_into), else a new tensor.
  static Tensor weight_grad(const Tensor& dy, const Tensor& input, Tensor into = Tensor(), double alpha = 1);
  // Fills the context as Linear's backward expects it.
  static void save_for_backward(OpContext& ctx, const Tensor& x, const Tensor& weight);

 private:
  int64_t in_, out_;
};

// The usual "Linear layer with bias" in one call: {Linear, Bias}, both initialized as PyTorch's
// nn.Linear (bias ~ U(-1/sqrt(in), 1/sqrt(in))). The fuser still sees two basic ops.
std::vector<std::shared_ptr<BasicOp>> linear_with_bias(int64_t in_features, int64_t out_features,
                                                       Generator* gen = nullptr);

}  // namespace fuselab
