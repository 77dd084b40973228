#include "ops/basic/embedding.h"

#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {

Embedding::Embedding(int64_t vocab, int64_t dim, Generator* gen) : BasicOp("Embedding") {
  check(vocab > 0 && dim > 0, "Embedding: sizes must be positive, got vocab ", vocab, ", dim ", dim);
  add_parameter("table", randn({vocab, dim}, DType::Float32, gen));
}

OpForward Embedding::op_forward(OpContext& ctx, const Tensor& ids, const std::vector<Tensor>&) {
  check(ids.defined(), describe(), ": undefined ids");
  check_parameters(ids.dtype(), ids.device(), ids.shape(), "ids");
  const Tensor y = math::embedding(describe().c_str(), table(), ids);
  if (ctx.requires_backward()) ctx.save<EmbeddingSaved>().ids = ids;
  return {y, {}};
}

OpBackward Embedding::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const Tensor& ids = ctx.saved<EmbeddingSaved>(describe()).ids;
  return {Tensor(), {}, {math::embedding_backward(dy, ids, table().shape())}};
}

}  // namespace fuselab
