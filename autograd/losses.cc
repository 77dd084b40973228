// Softmax, log-softmax and the losses. The math is in kernels/softmax.h.
//   mse = mean (p - t)^2:  dp = 2 (p - t) g / n,  dt = -dp

#include "autograd/checks.h"
#include "autograd/functional.h"
#include "kernels/elementwise.h"
#include "kernels/softmax.h"
#include "tensor/cross_entropy_rows.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {
namespace {

Tensor softmax_like(const char* name, const Tensor& x, bool log) {
  check_floating(name, x);
  check(x.dim() >= 1, name, ": needs at least one dim, got shape ", x.shape());
  const int64_t rows = math::rows_of(x), cols = x.size(-1);
  Tensor y = empty_like(x);
  launch_floating<WithBFloat16::Yes>(name, x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::SoftmaxForward<T>{x.ptr<T>(), y.ptr<T>(), rows, cols, log};
  });
  return record(name, {x}, y, [name, y = y.detach(), log, rows, cols](const auto& grads, const auto&) {
    const Tensor& dy = grads[0];
    Tensor dx = empty_like(y);
    launch_floating<WithBFloat16::Yes>(name, y, [&](auto zero) {
      using T = decltype(zero);
      return kernels::SoftmaxBackward<T>{y.ptr<T>(), dy.ptr<T>(), dx.ptr<T>(), rows, cols, log};
    });
    return std::vector<Tensor>{dx};
  });
}

}  // namespace

Tensor softmax(const Tensor& x) { return softmax_like("softmax", x, false); }
Tensor log_softmax(const Tensor& x) { return softmax_like("log_softmax", x, true); }

Tensor cross_entropy(const Tensor& logits, const Tensor& labels, int64_t ignore_index) {
  check_floating("cross_entropy", logits);
  math::check_cross_entropy_inputs("cross_entropy", logits.shape(), logits.dtype(), logits.device(), labels,
                                  ignore_index);
  const math::CrossEntropyRows rows = math::CrossEntropyRows::empty(logits.size(0), logits.dtype(), logits.device());
  math::cross_entropy_rows("cross_entropy", logits, labels, ignore_index, rows);
  const math::CrossEntropyMean mean = math::cross_entropy_mean(rows);
  return record("cross_entropy", {logits, labels}, mean.loss,
                [logits, labels, lse = rows.lse, counted = mean.counted, ignore_index](const auto& grads, const auto&) {
                  Tensor dx = empty_like(logits);
                  math::cross_entropy_rows_backward(logits, labels, lse, grads[0], counted, ignore_index, dx);
                  return std::vector<Tensor>{dx, Tensor()};
                });
}

Tensor mse(const Tensor& prediction, const Tensor& target) {
  check_floating("mse", prediction);
  check_floating("mse", target);
  check_same_dtype_device("mse", prediction, target);
  check(prediction.shape() == target.shape(), "mse: prediction ", prediction.shape(), " and target ",
        target.shape(), " must have the same shape");
  const Tensor diff = math::binary(math::BinaryOp::Sub, prediction, target);
  const double n = double(diff.numel() ? diff.numel() : 1);
  Tensor total = empty({}, DType::Float64, diff.device());  // sum (p - t)^2, on the device
  launch_floating<WithBFloat16::Yes>("mse", diff, [&](auto zero) {
    using T = decltype(zero);
    return kernels::SumSquares<T>{diff.ptr<T>(), diff.numel(), total.ptr<double>()};
  });
  Tensor loss = math::scaled(total, 1.0 / n).to(prediction.dtype());
  return record("mse", {prediction, target}, loss, [diff, n](const auto& grads, const auto& needs) {
    // dp = diff * (2 dloss / n), dloss staying on its device.
    const Tensor dp = math::binary(math::BinaryOp::Mul, diff, math::scaled(grads[0], 2.0 / n));
    return std::vector<Tensor>{needs[0] ? dp : Tensor(), needs[1] ? math::scaled(dp, -1) : Tensor()};
  });
}

}  // namespace fuselab
