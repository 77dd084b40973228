#include "ops/fused/lm_head_cross_entropy.h"

#include <algorithm>

#include "kernels/elementwise.h"
#include "kernels/matmul.h"
#include "ops/basic/bias.h"
#include "ops/basic/cross_entropy.h"
#include "ops/basic/linear.h"
#include "ops/fused/bias_fits_linear.h"
#include "ops/fusion_pattern.h"
#include "tensor/cross_entropy_rows.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {
namespace {

// out = op(a) op(b), or out += op(a) op(b) when `accumulate`, written in place (out may be a slice
// of a larger tensor, or a buffer kept across chunks, so that no chunk allocates).
void gemm_into(const Tensor& out, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b,
               bool accumulate) {
  const int64_t m = transpose_a ? a.size(1) : a.size(0), k = transpose_a ? a.size(0) : a.size(1);
  const int64_t n = transpose_b ? b.size(0) : b.size(1);
  launch_floating("LMHeadCrossEntropy", a, [&](auto zero) {
    using T = decltype(zero);
    return kernels::Matmul<T>{transpose_a, transpose_b, 1, m, n, k, a.ptr<T>(), b.ptr<T>(),
                              accumulate ? out.ptr<T>() : nullptr, out.ptr<T>()};
  });
}

// z += b on every row, in place.
void add_bias_rows(const Tensor& z, const Tensor& bias) {
  launch_floating("LMHeadCrossEntropy bias", z, [&](auto zero) {
    using T = decltype(zero);
    return kernels::Binary<T>{math::BinaryOp::Add, z.ptr<T>(), bias.ptr<T>(), z.ptr<T>(),
                              z.size(0),           z.size(1),  math::Broadcast::Row};
  });
}

// max(counted, 1) on the device, exactly, for a count of rows: counted + relu(1 - counted). Over no
// counted row the grad sums are all zero, and dividing them by 1 keeps them so.
Tensor at_least_one(const Tensor& counted) {
  const Tensor one = full({}, 1.0, counted.dtype(), counted.device());
  return math::binary(math::BinaryOp::Add, counted,
                      math::activation(math::Activation::ReLU, math::binary(math::BinaryOp::Sub, one, counted)));
}

}  // namespace

int64_t LMHeadCrossEntropy::chunk_rows(int64_t vocab, DType dtype) {
  return std::max<int64_t>(1, kChunkLogitsBytes / (std::max<int64_t>(vocab, 1) * int64_t(dtype_size(dtype))));
}

LMHeadCrossEntropy::LMHeadCrossEntropy(const OpList& ops) : FusedOp("LMHeadCrossEntropy", ops, Pass::ForwardBackward) {}

Bias* LMHeadCrossEntropy::bias() const { return basic_ops().size() == 3 ? &op<Bias>(1) : nullptr; }
size_t LMHeadCrossEntropy::loss_index() const { return basic_ops().size() - 1; }

FusedForward LMHeadCrossEntropy::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                                               const TensorLists& extra_inputs) {
  Linear& linear = op<Linear>(0);
  const CrossEntropy& loss = op<CrossEntropy>(loss_index());
  linear.check_input(x, linear.in_features());
  const Shape logits_shape = with_last(x.shape(), linear.out_features());
  const Tensor labels = loss.checked_labels(extra_inputs.at(loss_index()).at(0), logits_shape, x.dtype(), x.device());
  // bfloat16 runs widened to float32 (a copy of x and W), as FlashAttention's CPU tiles do: the
  // logits, the loss terms and the grad sums over the chunks keep float32's digits, and the grads
  // are rounded to bfloat16 once, in the backward.
  const DType dtype = compute_dtype(x.dtype());
  const Tensor rows = x.view({-1, linear.in_features()}).to(dtype), weight = linear.weight().to(dtype);
  const Tensor bias_row = bias() ? bias()->bias().to(dtype) : Tensor();
  const int64_t n = rows.size(0), chunk = std::min(n, chunk_rows(linear.out_features(), dtype));
  const std::vector<bool>& params = ctxs[0]->params_require_grad;
  const bool wants_dx = ctxs[0]->input_requires_grad, wants_dw = !params.empty() && params[0];
  const bool wants_db = bias() && ctxs[1]->params_require_grad.size() == 1 && ctxs[1]->params_require_grad[0];

  const math::CrossEntropyRows terms = math::CrossEntropyRows::empty(n, dtype, x.device());
  const Tensor logits = empty({std::max<int64_t>(chunk, 1), linear.out_features()}, dtype, x.device());
  Tensor gx = wants_dx ? empty(rows.shape(), dtype, x.device()) : Tensor();
  Tensor gw = wants_dw ? empty(weight.shape(), dtype, x.device()) : Tensor();
  Tensor gb = wants_db ? zeros({linear.out_features()}, dtype, x.device()) : Tensor();
  const std::string who = describe();
  for (int64_t start = 0; start < n; start += chunk) {
    const int64_t end = std::min(n, start + chunk);
    const Tensor z = logits.slice(0, end - start), x_chunk = rows.slice(start, end);
    const Tensor labels_chunk = labels.slice(start, end);
    const math::CrossEntropyRows terms_chunk = terms.slice(start, end);
    gemm_into(z, x_chunk, false, weight, true, false);
    if (bias_row.defined()) add_bias_rows(z, bias_row);
    if (!wants_dx && !wants_dw && !wants_db) {
      math::cross_entropy_rows(who.c_str(), z, labels_chunk, loss.ignore_index(), terms_chunk);
      continue;
    }
    math::cross_entropy_rows_and_grad(who.c_str(), z, labels_chunk, loss.ignore_index(), terms_chunk);  // z becomes g
    if (wants_dx) gemm_into(gx.slice(start, end), z, false, weight, false, false);
    if (wants_dw) gemm_into(gw, z, true, x_chunk, false, /*accumulate=*/start > 0);
    if (wants_db) math::add_(gb, math::sum_to(z, math::Broadcast::Row, gb.shape()));
  }
  if (wants_dw && n == 0) gw = zeros(weight.shape(), dtype, x.device());
  const math::CrossEntropyMean mean = math::cross_entropy_mean(terms);
  if (wants_dx || wants_dw || wants_db) {
    ctxs[0]->save<LMHeadCrossEntropySaved>() = {gx, gw, gb, mean.counted, x.shape(), x.dtype()};
  }
  return {mean.loss, TensorLists(basic_ops().size())};
}

FusedBackward LMHeadCrossEntropy::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dloss,
                                                 const TensorLists&) {
  const LMHeadCrossEntropySaved& s = ctxs[0]->saved<LMHeadCrossEntropySaved>(describe());
  const Tensor scale = math::binary(math::BinaryOp::Div, dloss, at_least_one(s.counted), describe().c_str());
  auto scaled = [&](const Tensor& sum) {
    return sum.defined() ? math::binary(math::BinaryOp::Mul, sum, scale, describe().c_str()).to(s.dtype) : Tensor();
  };
  const Tensor dx = scaled(s.input_grad_sum);
  TensorLists grad_extra_inputs(basic_ops().size()), grad_params(basic_ops().size());
  grad_extra_inputs[loss_index()] = {Tensor()};  // labels get no grad
  // dW is GW scaled by a scalar on the device: a pass of its own in any case, so it is not added into
  // a grad accumulated before (grad_to_accumulate_into); backward() adds the two, as for any grad.
  grad_params[0] = {scaled(s.weight_grad_sum)};
  if (bias()) grad_params[1] = {scaled(s.bias_grad_sum)};
  return {dx.defined() ? dx.view(s.input_shape) : Tensor(), grad_extra_inputs, grad_params};
}

// The example: rows of width `width` through an output Linear (with a Bias for an even number of
// rows) to a vocabulary a little wider than the width, every fifth label ignored.
FusionDefinition lm_head_cross_entropy_fusion() {
  FusionPattern pattern{{slot<Linear>(), optional_slot<Bias>(), slot<CrossEntropy>()},
                        {bias_fits_linear()},
                        [](const OpList& ops) { return std::make_shared<LMHeadCrossEntropy>(ops); }};
  return {"LMHeadCrossEntropy", Pass::ForwardBackward, fuse_pattern(std::move(pattern)),
          [](int64_t rows, int64_t width, DType dtype, Generator& gen) {
            const int64_t vocab = width + 1 + rows % 7;
            auto linear = std::make_shared<Linear>(width, vocab, &gen);
            std::vector<int64_t> labels(size_t(rows), -100);
            for (size_t r = 0; r < labels.size(); ++r) {
              if (r % 5 != 1) labels[r] = int64_t(gen.next_u64() % uint64_t(vocab));
            }
            std::vector<std::shared_ptr<BasicOp>> ops{linear, std::make_shared<CrossEntropy>()};
            if (rows % 2 == 0) ops.insert(ops.begin() + 1, std::make_shared<Bias>(vocab, 0.5, &gen));
            for (const auto& op : ops) op->to(dtype);
            return FusionExample{ops,
                                 uniform({rows, width}, -1, 1, dtype, &gen),
                                 {from_vector<int64_t>(labels, {rows})}};
          }};
}

}  // namespace fuselab
