#include "ops/basic/embedding.h"

#include "kernels/cpu/embedding.h"
#include "kernels/cuda/embedding.h"
#include "tensor/dispatch.h"
#include "tensor/factories.h"

namespace fuselab {

Embedding::Embedding(int64_t vocab, int64_t dim, Generator* gen) : BasicOp("Embedding"), vocab_(vocab), dim_(dim) {
  check(vocab > 0 && dim > 0, "Embedding: sizes must be positive, got vocab ", vocab, ", dim ", dim);
  add_parameter("table", randn({vocab, dim}, DType::Float32, gen));
}

OpForward Embedding::op_forward(OpContext& ctx, const Tensor& ids, const std::vector<Tensor>&) {
  check(ids.defined() && ids.dtype() == DType::Int64 && ids.device() == table().device(), describe(),
        ": ids must be int64 on ", table().device());
  for (int64_t id : ids.to_vector<int64_t>()) {
    check(0 <= id && id < vocab_, describe(), ": id ", id, " out of range for a table of shape ", table().shape());
  }
  Shape out_shape = ids.shape();
  out_shape.push_back(dim_);
  Tensor y = empty(out_shape, table().dtype(), table().device());
  dispatch_floating_on_device(
      "Embedding", table(),
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cpu::embedding_forward<T>(table().data<T>(), ids.data<int64_t>(), y.data<T>(), ids.numel(), dim_);
      },
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cuda::embedding_forward<T>(table().cuda_data<T>(), ids.cuda_data<int64_t>(), y.cuda_data<T>(),
                                            ids.numel(), dim_, ids.device().index);
      });
  if (ctx.requires_backward()) ctx.save<EmbeddingSaved>().ids = ids;
  return {y, {}};
}

OpBackward Embedding::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const Tensor& ids = ctx.saved<EmbeddingSaved>(describe()).ids;
  Tensor dtable = zeros_like(table());
  dispatch_floating_on_device(
      "Embedding backward", dy,
      [&](auto zero) {
        using T = decltype(zero);
        kernels::cpu::embedding_backward<T>(dy.data<T>(), ids.data<int64_t>(), dtable.data<T>(), ids.numel(), dim_);
      },
      [&](auto zero) {  // writes every row of dtable
        using T = decltype(zero);
        kernels::cuda::embedding_backward<T>(dy.cuda_data<T>(), ids.cuda_data<int64_t>(), dtable.cuda_data<T>(),
                                             ids.numel(), vocab_, dim_, dy.device().index);
      });
  return {Tensor(), {}, {dtable}};
}

}  // namespace fuselab
