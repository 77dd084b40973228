// Embedding: integer ids of any shape -> rows of a table [vocab, dim]; y has shape ids + [dim].
//   dtable[id] += dy[i] for every position i holding id; ids get no grad.
#pragma once

#include "ops/basic_op.h"
#include "tensor/random.h"

namespace fuselab {

struct EmbeddingSaved {
  Tensor ids;
  NamedTensors tensors() const { return {{"ids", ids}}; }
};

class Embedding : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  // table ~ N(0, 1), as PyTorch's default.
  Embedding(int64_t vocab, int64_t dim, Generator* gen = nullptr);
  Tensor& table() { return parameter(0); }

  OpForward op_forward(OpContext& ctx, const Tensor& ids, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;
};

}  // namespace fuselab
