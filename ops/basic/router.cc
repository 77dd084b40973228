#include "ops/basic/router.h"

#include <cmath>

#include "kernels/router.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

Router::Router(int64_t width, int64_t experts, int64_t top_k, RouterScore score, Generator* gen, bool losses)
    : BasicOp("Router"), width_(width), experts_(experts), top_k_(top_k), score_(score), losses_(losses) {
  check(width_ > 0 && experts_ > 0, "Router: sizes must be positive, got width ", width_, ", ", experts_, " experts");
  check(top_k_ >= 1 && top_k_ <= experts_, "Router: top_k ", top_k_, " must be in [1, ", experts_,
        "], the number of experts");
  const double bound = 1.0 / std::sqrt(double(width_));
  add_parameter("weight", uniform({experts_, width_}, -bound, bound, DType::Float32, gen));
}

OpForward Router::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  check_input(x, width_);
  // bfloat16 x and W route in float32: the logits, the top-k and the weights are float32 numbers
  // (a top-k of bfloat16 logits would flip on their rounding), rounded into x's dtype on the way out.
  const DType compute = compute_dtype(x.dtype());
  const Tensor rows = x.view({-1, width_}).to(compute), w = weight().to(compute);
  const int64_t n = rows.size(0), k = top_k_;
  const Tensor logits = math::matmul(rows, false, w, true);
  RouterSaved saved{rows, w, empty({n, k}, compute, x.device()), empty({n, k}, DType::Int64, x.device())};
  if (losses_ || score_ == RouterScore::SoftmaxAll) {
    saved.probs = empty({n, experts_}, compute, x.device());
    saved.lse = empty({n}, compute, x.device());
  }
  launch_floating(describe().c_str(), rows, [&](auto zero) {
    using T = decltype(zero);
    return kernels::RouterForward<T>{logits.ptr<T>(), saved.weights.ptr<T>(), saved.indices.ptr<int64_t>(),
                                     ptr_or_null<T>(saved.probs), ptr_or_null<T>(saved.lse), n, experts_, k,
                                     score_};
  });
  const Shape choice_shape = with_last(x.shape(), k);  // x's leading dims and k
  OpForward out{x, {saved.weights.to(x.dtype()).view(choice_shape), saved.indices.view(choice_shape)}};
  if (losses_) {
    saved.shares = empty({experts_}, compute, x.device());
    Tensor balance = empty({}, compute, x.device()), z = empty({}, compute, x.device());
    launch_floating(describe().c_str(), rows, [&](auto zero) {
      using T = decltype(zero);
      return kernels::RouterLosses<T>{saved.indices.ptr<int64_t>(), saved.probs.ptr<T>(), saved.lse.ptr<T>(),
                                      saved.shares.ptr<T>(), balance.ptr<T>(), z.ptr<T>(), n, experts_, k};
    });
    out.extra_outputs.push_back(balance.to(x.dtype()));
    out.extra_outputs.push_back(z.to(x.dtype()));
  }
  if (ctx.requires_backward()) ctx.save<RouterSaved>() = saved;
  return out;
}

OpBackward Router::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>& grad_extra) {
  const RouterSaved& saved = ctx.saved<RouterSaved>(describe());
  const int64_t n = saved.input.size(0);
  const DType compute = saved.input.dtype();
  // Each undefined when nothing used its output; in the dtype and on the device the kernel reads.
  const auto grad_of = [&](int slot) {
    const Tensor& grad = grad_extra.at(size_t(slot));
    return grad.defined() ? grad.to(compute).to(dy.device()) : Tensor();
  };
  const Tensor dweights = grad_of(0), dbalance = losses_ ? grad_of(2) : Tensor(), dz = losses_ ? grad_of(3) : Tensor();
  if (!dweights.defined() && !dbalance.defined() && !dz.defined()) {
    return {dy, {}, {ctx.params_require_grad.at(0) ? zeros(saved.weight.shape(), dy.dtype(), dy.device()) : Tensor()}};
  }
  const Tensor dl = empty({n, experts_}, compute, dy.device());
  launch_floating(describe().c_str(), dl, [&](auto zero) {
    using T = decltype(zero);
    return kernels::RouterBackward<T>{ptr_or_null<T>(dweights), saved.weights.ptr<T>(), saved.indices.ptr<int64_t>(),
                                      ptr_or_null<T>(saved.probs), ptr_or_null<T>(saved.lse),
                                      ptr_or_null<T>(saved.shares), ptr_or_null<T>(dbalance), ptr_or_null<T>(dz),
                                      dl.ptr<T>(), n, experts_, top_k_, score_};
  });
  Tensor dx = math::matmul(dl, false, saved.weight, false).to(dy.dtype()).view(dy.shape());
  math::add_(dx, dy);
  const Tensor dw =
      ctx.params_require_grad.at(0) ? math::matmul(dl, true, saved.input, false).to(dy.dtype()) : Tensor();
  return {dx, {}, {dw}};
}

}  // namespace fuselab
