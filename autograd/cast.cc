// A differentiable change of floating dtype, the way into and out of bfloat16:
//   y = x rounded to `dtype`;  dx = dy converted back to x's dtype
// The derivative of a cast is 1: the rounding is not differentiated, as in every framework.
#include "autograd/checks.h"
#include "autograd/functional.h"

namespace fuselab {

Tensor cast(const Tensor& x, DType dtype) {
  check(x.defined(), "cast: undefined tensor argument");
  check(is_floating(x.dtype()) && is_floating(dtype), "cast: converts between floating dtypes, got ", x.dtype(),
        " of shape ", x.shape(), " to ", dtype);
  if (dtype == x.dtype()) return x;
  const DType from = x.dtype();
  return record("cast", {x}, x.to(dtype), [from](const auto& grads, const auto&) {
    return std::vector<Tensor>{grads[0].to(from)};
  });
}

}  // namespace fuselab
