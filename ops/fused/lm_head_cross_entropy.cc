#include "ops/fused/lm_head_cross_entropy.h"

#include <algorithm>

#include "autograd/tape.h"
#include "kernels/matmul.h"
#include "ops/basic/cross_entropy.h"
#include "ops/basic/linear.h"
#include "ops/fusion_pattern.h"
#include "tensor/cross_entropy_rows.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {
namespace {

// A chunk's logits x_c W^T, written into `logits` (a buffer kept across chunks, so that no chunk
// allocates).
void chunk_logits(const Tensor& x_chunk, const Tensor& weight, const Tensor& logits) {
  launch_floating("LMHeadCrossEntropy logits", x_chunk, [&](auto zero) {
    using T = decltype(zero);
    return kernels::Matmul<T>{false,          true,          1, x_chunk.size(0), weight.size(0), weight.size(1),
                              x_chunk.ptr<T>(), weight.ptr<T>(), nullptr, logits.ptr<T>()};
  });
}

// The rows [start, end) of every chunk, in order.
template <class Body>
void for_each_chunk(int64_t rows, int64_t chunk, Body&& body) {
  for (int64_t start = 0; start < rows; start += chunk) body(start, std::min(rows, start + chunk));
}

}  // namespace

int64_t LMHeadCrossEntropy::chunk_rows(int64_t vocab, DType dtype) {
  return std::max<int64_t>(1, kChunkLogitsBytes / (std::max<int64_t>(vocab, 1) * int64_t(dtype_size(dtype))));
}

LMHeadCrossEntropy::LMHeadCrossEntropy(const OpList& ops) : FusedOp("LMHeadCrossEntropy", ops, Pass::ForwardBackward) {}

FusedForward LMHeadCrossEntropy::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                                               const TensorLists& extra_inputs) {
  Linear& linear = op<Linear>(0);
  const CrossEntropy& loss = op<CrossEntropy>(1);
  linear.check_input(x, linear.in_features());
  Shape logits_shape = x.shape();
  logits_shape.back() = linear.out_features();
  const Tensor labels = loss.checked_labels(extra_inputs.at(1).at(0), logits_shape, x.dtype(), x.device());
  const Tensor rows = x.view({-1, linear.in_features()}), weight = linear.weight();
  const int64_t n = rows.size(0), chunk = std::min(n, chunk_rows(linear.out_features(), x.dtype()));

  const math::CrossEntropyRows terms = math::CrossEntropyRows::empty(n, x.dtype(), x.device());
  const Tensor logits = empty({std::max<int64_t>(chunk, 1), linear.out_features()}, x.dtype(), x.device());
  for_each_chunk(n, chunk, [&](int64_t start, int64_t end) {
    const Tensor z = logits.slice(0, end - start);
    chunk_logits(rows.slice(start, end), weight, z);
    math::cross_entropy_rows(z, labels.slice(start, end), loss.ignore_index(), terms.slice(start, end));
  });
  const math::CrossEntropyMean mean = math::cross_entropy_mean(terms);
  if (ctxs[0]->requires_backward() || ctxs[1]->requires_backward()) {
    ctxs[0]->save<LMHeadCrossEntropySaved>() = {rows, weight, labels, terms.lse, mean.counted, x.shape()};
  }
  return {mean.loss, TensorLists(basic_ops().size())};
}

FusedBackward LMHeadCrossEntropy::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dloss,
                                                 const TensorLists&) {
  const LMHeadCrossEntropySaved& s = ctxs[0]->saved<LMHeadCrossEntropySaved>(describe());
  const int64_t ignore_index = op<CrossEntropy>(1).ignore_index();
  const int64_t n = s.input.size(0), chunk = std::min(n, chunk_rows(s.weight.size(0), s.input.dtype()));
  const bool wants_dx = ctxs[0]->input_requires_grad, wants_dw = ctxs[0]->params_require_grad.at(0);
  Tensor dx = wants_dx ? zeros(s.input.shape(), s.input.dtype(), s.input.device()) : Tensor();
  // dW starts as the weight's grad so far when nothing else sees it (gradient accumulation), as in Linear.
  Tensor dw = wants_dw ? grad_to_accumulate_into(s.weight) : Tensor();
  const Tensor logits = empty({std::max<int64_t>(chunk, 1), s.weight.size(0)}, s.input.dtype(), s.input.device());
  for_each_chunk(wants_dx || wants_dw ? n : 0, chunk, [&](int64_t start, int64_t end) {
    const Tensor x_chunk = s.input.slice(start, end), dz = logits.slice(0, end - start);
    chunk_logits(x_chunk, s.weight, dz);
    math::cross_entropy_rows_backward(dz, s.labels.slice(start, end), s.lse.slice(start, end), dloss, s.counted,
                                      ignore_index, dz);
    if (wants_dx) {
      Tensor dx_chunk = dx.slice(start, end);
      math::matmul_add_into(dx_chunk, dz, false, s.weight, false);
    }
    if (wants_dw) dw = Linear::weight_grad(dz, x_chunk, dw);
  });
  TensorLists grad_extra_inputs(basic_ops().size()), grad_params(basic_ops().size());
  grad_extra_inputs[1] = {Tensor()};  // labels get no grad
  grad_params[0] = {dw};
  return {wants_dx ? dx.view(s.input_shape) : Tensor(), grad_extra_inputs, grad_params};
}

namespace {

// The fused op computes the loss with the CrossEntropy op's kernels, which take float32 and float64;
// in another dtype the unfused ops run, and the CrossEntropy op names the dtype it refuses.
PatternPredicate loss_kernels_take_the_dtype() {
  return {"the loss kernels take the dtype", [](const PatternMatch&, const FusionFacts& facts) {
            return facts.dtype == DType::Float32 || facts.dtype == DType::Float64
                       ? std::string()
                       : std::string("CrossEntropy takes float32 and float64, not ") + dtype_name(facts.dtype);
          }};
}

}  // namespace

// The example: rows of width `width` through an output Linear to a vocabulary a little wider than
// the width (tied to nothing), every fifth label ignored.
FusionDefinition lm_head_cross_entropy_fusion() {
  FusionPattern pattern{{slot<Linear>(), slot<CrossEntropy>()},
                        {loss_kernels_take_the_dtype()},
                        [](const OpList& ops) { return std::make_shared<LMHeadCrossEntropy>(ops); }};
  return {"LMHeadCrossEntropy", Pass::ForwardBackward, fuse_pattern(std::move(pattern)),
          [](int64_t rows, int64_t width, DType dtype, Generator& gen) {
            const int64_t vocab = width + 1 + rows % 7;
            auto linear = std::make_shared<Linear>(width, vocab, &gen);
            linear->to(dtype);
            std::vector<int64_t> labels(size_t(rows), -100);
            for (size_t r = 0; r < labels.size(); ++r) {
              if (r % 5 != 1) labels[r] = int64_t(gen.next_u64() % uint64_t(vocab));
            }
            return FusionExample{{linear, std::make_shared<CrossEntropy>()},
                                 uniform({rows, width}, -1, 1, dtype, &gen),
                                 {from_vector<int64_t>(labels, {rows})}};
          }};
}

}  // namespace fuselab
