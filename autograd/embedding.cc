// Embedding lookup: out[i] = table[ids[i]];  dtable[ids[i]] += dout[i] (scatter-add).
#include "autograd/checks.h"
#include "autograd/functional.h"
#include "tensor/tensor_math.h"

namespace fuselab {

Tensor embedding(const Tensor& table, const Tensor& ids) {
  check_floating("embedding", table);
  const Shape table_shape = table.shape();
  return record("embedding", {table, ids}, math::embedding("embedding", table, ids),
                [ids, table_shape](const auto& grads, const auto&) {
                  return std::vector<Tensor>{math::embedding_backward(grads[0], ids, table_shape), Tensor()};
                });
}

}  // namespace fuselab
