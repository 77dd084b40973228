#include "ops/basic/cross_entropy.h"

#include "tensor/cross_entropy_rows.h"
#include "tensor/factories.h"

namespace fuselab {

Tensor CrossEntropy::checked_labels(const Tensor& labels, const Shape& logits_shape, DType dtype,
                                    Device device) const {
  Shape leading = logits_shape;
  leading.pop_back();
  check(labels.defined() && labels.shape() == leading, describe(), ": labels ",
        labels.defined() ? labels.shape() : Shape{}, " must have the leading dims ", leading, " of the logits ",
        logits_shape);
  const Tensor rows = labels.view({-1});
  math::check_cross_entropy_inputs(describe(), {rows.size(0), logits_shape.back()}, dtype, device, rows,
                                   ignore_index_);
  return rows;
}

OpForward CrossEntropy::op_forward(OpContext& ctx, const Tensor& logits, const std::vector<Tensor>& extra) {
  check_input(logits, -1);
  check(logits.size(-1) > 0, describe(), ": logits ", logits.shape(), " have no classes");
  const Tensor x = logits.view({-1, logits.size(-1)});
  const Tensor labels = checked_labels(extra.at(0), logits.shape(), logits.dtype(), logits.device());
  const math::CrossEntropyRows rows = math::CrossEntropyRows::empty(x.size(0), x.dtype(), x.device());
  math::cross_entropy_rows(describe().c_str(), x, labels, ignore_index_, rows);
  const math::CrossEntropyMean mean = math::cross_entropy_mean(rows);
  if (ctx.requires_backward()) ctx.save<CrossEntropySaved>() = {x, labels, rows.lse, mean.counted, logits.shape()};
  return {mean.loss, {}};
}

OpBackward CrossEntropy::op_backward(OpContext& ctx, const Tensor& dloss, const std::vector<Tensor>&) {
  const CrossEntropySaved& saved = ctx.saved<CrossEntropySaved>(describe());
  Tensor dx = empty_like(saved.logits);
  math::cross_entropy_rows_backward(saved.logits, saved.labels, saved.lse, dloss, saved.counted, ignore_index_, dx);
  return {dx.view(saved.input_shape), {Tensor()}, {}};
}

}  // namespace fuselab
