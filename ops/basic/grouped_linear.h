// GroupedLinear: G weight matrices W_g [out, in], stacked as W [G, out, in], each applied to its
// own run of consecutive rows of x [rows, in] (x may have leading dims: its rows are x viewed as
// [-1, in]). The runs' sizes are the call's one extra input, int64 [G] on any device, summing to
// rows (a size may be 0): a mixture of experts' tokens sorted by expert, each expert's Linear.
// With a bias, b [G, out] (each group's own, as TransformerEngine's GroupedLinear):
//   y[rows_g] = x[rows_g] W_g^T + b_g,   dx[rows_g] = dy[rows_g] W_g,
//   dW_g = dy[rows_g]^T x[rows_g],        db_g = sum over rows_g of dy
// One GEMM per group that has rows (kernels/matmul.h, GroupedMatmul: the groups in parallel on the
// CPU when there are enough of them), the bias added to the group's rows; a group without rows gets
// dW_g = 0 and db_g = 0.
// The sizes get no grad.
#pragma once

#include "ops/basic_op.h"
#include "tensor/random.h"

namespace fuselab {

struct GroupedLinearSaved {
  Tensor input;   // [rows, in]
  Tensor weight;  // [G, out, in], as used by the forward
  Tensor sizes;   // int64 [G], on the CPU
  NamedTensors tensors() const { return {{"input", input}, {"weight", weight}, {"sizes", sizes}}; }
};

class GroupedLinear : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }  // tensor_math and views only
  // Each W_g and b_g ~ U(-1/sqrt(in), 1/sqrt(in)), as PyTorch's Linear's.
  GroupedLinear(int64_t groups, int64_t in_features, int64_t out_features, Generator* gen = nullptr,
                bool bias = false);
  int num_extra_inputs() const override { return 1; }  // the groups' sizes
  int64_t groups() const { return groups_; }
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  Tensor& weight() { return parameter(0); }
  bool has_bias() const { return parameters().size() == 2; }
  Tensor& bias() { return parameter(1); }  // [G, out], with a bias

  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>& extra) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

  // The sizes as host integers, checked against `rows`: int64 [groups], each >= 0, summing to rows
  // (else an error naming the op, the sizes and the rows).
  std::vector<int64_t> checked_sizes(const Tensor& sizes, int64_t rows) const;

 private:
  int64_t groups_, in_, out_;
};

}  // namespace fuselab
