// Embedding lookup: out[i] = table[ids[i]];  dtable[ids[i]] += dout[i] (scatter-add).
#include "autograd/checks.h"
#include "autograd/functional.h"
#include "kernels/cpu/embedding.h"
#include "tensor/dispatch.h"
#include "tensor/factories.h"

namespace fuselab {

Tensor embedding(const Tensor& table, const Tensor& ids) {
  check_floating_cpu("embedding", table);
  check(table.dim() == 2, "embedding: table must be [V, D], got shape ", table.shape());
  check(ids.defined() && ids.dtype() == DType::Int64 && ids.device() == table.device(),
        "embedding: ids must be int64 on ", table.device());
  const int64_t vocab = table.size(0), dim = table.size(1), count = ids.numel();
  for (int64_t id : ids.to_vector<int64_t>()) {
    check(0 <= id && id < vocab, "embedding: id ", id, " out of range for a table of shape ", table.shape());
  }
  Shape out_shape = ids.shape();
  out_shape.push_back(dim);
  Tensor out = empty(out_shape, table.dtype());
  dispatch_floating(table.dtype(), "embedding", [&](auto zero) {
    using T = decltype(zero);
    kernels::cpu::embedding_forward<T>(table.data<T>(), ids.data<int64_t>(), out.data<T>(), count, dim);
  });
  const Shape table_shape = table.shape();
  return record("embedding", {table, ids}, out, [ids, table_shape, count, dim](const auto& grads, const auto&) {
    Tensor dtable = zeros(table_shape, grads[0].dtype());
    dispatch_floating(dtable.dtype(), "embedding", [&](auto zero) {
      using T = decltype(zero);
      kernels::cpu::embedding_backward<T>(grads[0].template data<T>(), ids.data<int64_t>(), dtable.data<T>(),
                                          count, dim);
    });
    return std::vector<Tensor>{dtable, Tensor()};
  });
}

}  // namespace fuselab
