#include "tensor/cross_entropy_rows.h"

#include "kernels/softmax.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab::math {

void check_cross_entropy_inputs(const std::string& op, const Shape& logits_shape, DType dtype, Device device,
                                const Tensor& labels, int64_t ignore_index) {
  check(is_floating(dtype), op, ": logits must be float32, float64 or bfloat16, got ", dtype, " of shape ",
        logits_shape);
  check(labels.defined() && labels.dtype() == DType::Int64 && labels.device() == device, op,
        ": labels must be int64 on ", device, ", got ",
        labels.defined() ? dtype_name(labels.dtype()) + std::string(" on ") + labels.device().str() : "undefined");
  check(logits_shape.size() == 2 && labels.dim() == 1 && labels.size(0) == logits_shape[0], op, ": logits ",
        logits_shape, " and labels ", labels.shape(), " must be [N, C] and [N]");
  if (!device.is_cpu()) return;
  const std::vector<int64_t> values = labels.to_vector<int64_t>();
  const int64_t classes = logits_shape[1];
  for (size_t row = 0; row < values.size(); ++row) {
    const int64_t label = values[row];
    check(label == ignore_index || (0 <= label && label < classes), op, ": label ", label, " out of range for ",
          classes, " classes (row ", row, " of logits ", logits_shape, "; ignore_index ", ignore_index, ")");
  }
}

CrossEntropyRows CrossEntropyRows::empty(int64_t rows, DType logits_dtype, Device device) {
  const DType dtype = compute_dtype(logits_dtype);
  return {fuselab::empty({rows}, dtype, device), fuselab::empty({rows, 1}, dtype, device),
          fuselab::empty({rows, 1}, dtype, device)};
}

CrossEntropyRows CrossEntropyRows::slice(int64_t start, int64_t end) const {
  return {lse.slice(start, end), loss.slice(start, end), counted.slice(start, end)};
}

void cross_entropy_rows(const char* op, const Tensor& logits, const Tensor& labels, int64_t ignore_index,
                        const CrossEntropyRows& into) {
  const int64_t rows = logits.size(0), cols = logits.size(1);
  kernels::IndexFault* fault = index_fault_record(logits.device(), op);
  launch_floating<WithBFloat16::Yes>(op, logits, [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    return kernels::CrossEntropyForward<T>{logits.ptr<T>(),   labels.ptr<int64_t>(),   into.lse.ptr<C>(),
                                           into.loss.ptr<C>(), into.counted.ptr<C>(), rows,
                                           cols,               ignore_index,          fault};
  });
}

void cross_entropy_rows_and_grad(const char* op, const Tensor& logits, const Tensor& labels, int64_t ignore_index,
                                 const CrossEntropyRows& into) {
  kernels::IndexFault* fault = index_fault_record(logits.device(), op);
  launch_floating<WithBFloat16::Yes>(op, logits, [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    return kernels::CrossEntropyForwardGrad<T>{logits.ptr<T>(),    labels.ptr<int64_t>(),  into.lse.ptr<C>(),
                                               into.loss.ptr<C>(), into.counted.ptr<C>(), logits.size(0),
                                               logits.size(1),     ignore_index,          fault};
  });
}

CrossEntropyMean cross_entropy_mean(const CrossEntropyRows& rows) {
  const Tensor counted = sum_to(rows.counted, Broadcast::Scalar, {});
  return {binary(BinaryOp::Div, sum_to(rows.loss, Broadcast::Scalar, {}), counted, "cross_entropy"), counted};
}

void cross_entropy_rows_backward(const Tensor& logits, const Tensor& labels, const Tensor& lse, const Tensor& dloss,
                                 const Tensor& counted, int64_t ignore_index, const Tensor& dlogits) {
  launch_floating<WithBFloat16::Yes>("cross_entropy backward", logits, [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    return kernels::CrossEntropyBackward<T>{logits.ptr<T>(),  labels.ptr<int64_t>(), lse.ptr<C>(),
                                            dloss.ptr<C>(),   counted.ptr<C>(),      dlogits.ptr<T>(),
                                            logits.size(0),   logits.size(1),        ignore_index};
  });
}

}  // namespace fuselab::math
