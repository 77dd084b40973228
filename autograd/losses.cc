// Softmax, log-softmax and the losses. The math is in kernels/softmax.h.
//   mse = mean (p - t)^2:  dp = 2 (p - t) g / n,  dt = -dp

#include "autograd/checks.h"
#include "autograd/functional.h"
#include "kernels/elementwise.h"
#include "kernels/softmax.h"
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
  check(labels.defined() && labels.dtype() == DType::Int64 && labels.device() == logits.device(),
        "cross_entropy: labels must be int64 on ", logits.device(), ", got ",
        labels.defined() ? dtype_name(labels.dtype()) + std::string(" on ") + labels.device().str() : "undefined");
  check(logits.dim() == 2 && labels.dim() == 1 && labels.size(0) == logits.size(0),
        "cross_entropy: logits ", logits.shape(), " and labels ", labels.shape(),
        " must be [N, C] and [N]");
  const int64_t rows = logits.size(0), cols = logits.size(1);
  if (labels.device().is_cpu()) {  // on CUDA the kernel checks, without a wait (kernels/index_fault.h)
    for (int64_t label : labels.to_vector<int64_t>()) {
      check(label == ignore_index || (0 <= label && label < cols), "cross_entropy: label ", label,
            " out of range for ", cols, " classes (logits ", logits.shape(), ")");
    }
  }
  const Device device = logits.device();
  Tensor lse = empty({rows}, logits.dtype(), device);
  Tensor row_loss = empty({rows, 1}, logits.dtype(), device), row_counted = empty({rows, 1}, logits.dtype(), device);
  kernels::IndexFault* fault = math::index_fault_record(device);
  launch_floating("cross_entropy", logits, [&](auto zero) {
    using T = decltype(zero);
    return kernels::CrossEntropyForward<T>{logits.ptr<T>(),      labels.ptr<int64_t>(), lse.ptr<T>(),
                                           row_loss.ptr<T>(),    row_counted.ptr<T>(),  rows,
                                           cols,                 ignore_index,          fault};
  });
  // The mean over the counted rows, on the device. Over none it is 0 / 0: NaN, as in PyTorch, so
  // that a batch with nothing to learn from shows up in the loss instead of reading as a perfect 0.
  const Tensor counted = math::sum_to(row_counted, math::Broadcast::Scalar, {});
  const Tensor loss =
      math::binary(math::BinaryOp::Div, math::sum_to(row_loss, math::Broadcast::Scalar, {}), counted, "cross_entropy");
  return record("cross_entropy", {logits, labels}, loss,
                [logits, labels, lse, counted, ignore_index, rows, cols](const auto& grads, const auto&) {
                  Tensor dx = empty_like(logits);
                  const Tensor& dloss = grads[0];  // read by the kernel on its device, as is counted
                  // No counted row, no grad: every row is ignored, so every dx is zero.
                  launch_floating("cross_entropy backward", logits, [&](auto zero) {
                    using T = decltype(zero);
                    return kernels::CrossEntropyBackward<T>{
                        logits.ptr<T>(), labels.ptr<int64_t>(), lse.ptr<T>(), dloss.ptr<T>(), counted.ptr<T>(),
                        dx.ptr<T>(),     rows,                  cols,         ignore_index};
                  });
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
