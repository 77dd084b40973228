#include "tensor/broadcast.h"

#include <algorithm>

#include "kernels/elementwise.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab::math {

using kernels::StridedIndex;

namespace {

// `shape` padded with leading 1s to `dims` dims, as the NumPy rule aligns it.
Shape aligned(const Shape& shape, size_t dims) {
  Shape padded(dims - shape.size(), 1);
  padded.insert(padded.end(), shape.begin(), shape.end());
  return padded;
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

void check_dims(const char* op, const Shape& shape) {
  check(int(shape.size()) <= StridedIndex::kMaxDims, op, ": broadcasting to shape ", shape, " supports at most ",
        StridedIndex::kMaxDims, " dims");
}

void push_dim(StridedIndex& index, int64_t size, int64_t stride) {
  index.sizes[index.dims] = size;
  index.strides[index.dims] = stride;
  ++index.dims;
}

// Along a dim of size 1 every index is 0, so x is broadcast along the dims where `from` is 1 and
// `to` is not: there x's stride becomes 0.
bool broadcast_along(const Shape& from, const Shape& to, size_t d) { return from[d] == 1 && to[d] != 1; }

}  // namespace

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  const size_t dims = std::max(a.size(), b.size());
  const Shape pa = aligned(a, dims), pb = aligned(b, dims);
  Shape result(dims);
  for (size_t d = 0; d < dims; ++d) {
    check(pa[d] == pb[d] || pa[d] == 1 || pb[d] == 1, op, ": cannot broadcast shapes ", a, " and ", b,
          " (NumPy rule: aligned at the last dim, each pair of sizes must be equal or one of them 1)");
    result[d] = pa[d] == 1 ? pb[d] : pa[d];
  }
  return result;
}

Tensor expand(const Tensor& x, const Shape& shape) {
  check_dims("expand", shape);
  check(broadcast_shapes("expand", x.shape(), shape) == shape, "expand: shape ", x.shape(),
        " does not broadcast to ", shape);
  const Shape from = aligned(x.shape(), shape.size());
  const std::vector<int64_t> strides = contiguous_strides(from);
  StridedIndex src;
  for (size_t d = 0; d < shape.size(); ++d) push_dim(src, shape[d], broadcast_along(from, shape, d) ? 0 : strides[d]);
  Tensor out = empty(shape, x.dtype(), x.device());
  launch_floating<WithBFloat16::Yes>("expand", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::Expand<T>{x.ptr<T>(), src, out.ptr<T>(), out.numel()};
  });
  return out;
}

Tensor reduce_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  check_dims("reduce_to", grad.shape());
  check(broadcast_shapes("reduce_to", shape, grad.shape()) == grad.shape(), "reduce_to: shape ", shape,
        " does not broadcast to the grad's ", grad.shape());
  // The fast kernels' patterns: one element, or a row vector repeated over every leading dim.
  if (fuselab::numel(shape) == 1) return sum_to(grad, Broadcast::Scalar, shape);
  const Shape to = aligned(shape, grad.dim());
  bool row = true;
  for (size_t d = 0; d + 1 < to.size(); ++d) row &= to[d] == 1;
  if (row && to.back() == grad.size(-1)) return sum_to(grad, Broadcast::Row, shape);

  const std::vector<int64_t> strides = contiguous_strides(grad.shape());
  StridedIndex kept, summed;
  int64_t count = 1;  // grad elements per output element
  for (size_t d = 0; d < to.size(); ++d) {
    const bool sum_along = broadcast_along(to, grad.shape(), d);
    push_dim(sum_along ? summed : kept, grad.shape()[d], strides[d]);
    if (sum_along) count *= grad.shape()[d];
  }
  Tensor out = empty(shape, grad.dtype(), grad.device());
  launch_floating<WithBFloat16::Yes>("reduce_to", grad, [&](auto zero) {
    using T = decltype(zero);
    return kernels::SumBroadcast<T>{grad.ptr<T>(), kept, summed, count, out.ptr<T>(), out.numel()};
  });
  return out;
}

}  // namespace fuselab::math
