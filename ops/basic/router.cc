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
  check(x.dtype() != DType::BFloat16, describe(), ": routes in float32 or float64, not bfloat16 (a top-k of "
        "bfloat16 logits flips on their rounding); keep the router's input and weight in float32");
  const Tensor rows = x.view({-1, width_});
  const int64_t n = rows.size(0), k = top_k_;
  const Tensor logits = math::matmul(rows, false, weight(), true);
  RouterSaved saved{rows, weight(), empty({n, k}, x.dtype(), x.device()), empty({n, k}, DType::Int64, x.device())};
  if (losses_) {
    saved.probs = empty({n, experts_}, x.dtype(), x.device());
    saved.lse = empty({n}, x.dtype(), x.device());
  }
  launch_floating<WithBFloat16::No>(describe().c_str(), x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::RouterForward<T>{logits.ptr<T>(), saved.weights.ptr<T>(), saved.indices.ptr<int64_t>(),
                                     ptr_or_null<T>(saved.probs), ptr_or_null<T>(saved.lse), n, experts_, k,
                                     score_ == RouterScore::Sigmoid};
  });
  Shape choice_shape = x.shape();  // x's leading dims and k
  choice_shape.back() = k;
  OpForward out{x, {saved.weights.view(choice_shape), saved.indices.view(choice_shape)}};
  if (losses_) {
    saved.shares = empty({experts_}, x.dtype(), x.device());
    Tensor balance = empty({}, x.dtype(), x.device()), z = empty({}, x.dtype(), x.device());
    launch_floating<WithBFloat16::No>(describe().c_str(), x, [&](auto zero) {
      using T = decltype(zero);
      return kernels::RouterLosses<T>{saved.indices.ptr<int64_t>(), saved.probs.ptr<T>(), saved.lse.ptr<T>(),
                                      saved.shares.ptr<T>(), balance.ptr<T>(), z.ptr<T>(), n, experts_, k};
    });
    out.extra_outputs.push_back(balance);
    out.extra_outputs.push_back(z);
  }
  if (ctx.requires_backward()) ctx.save<RouterSaved>() = saved;
  return out;
}

OpBackward Router::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>& grad_extra) {
  const RouterSaved& saved = ctx.saved<RouterSaved>(describe());
  const int64_t n = saved.input.size(0);
  // Each undefined when nothing used its output; the losses' grads as the kernel reads them.
  const Tensor& dweights = grad_extra.at(0);
  const auto loss_grad = [&](int slot) {
    return losses_ && grad_extra.at(slot).defined() ? grad_extra.at(slot).to(dy.dtype()).to(dy.device()) : Tensor();
  };
  const Tensor dbalance = loss_grad(2), dz = loss_grad(3);
  if (!dweights.defined() && !dbalance.defined() && !dz.defined()) {
    return {dy, {}, {ctx.params_require_grad.at(0) ? zeros_like(saved.weight) : Tensor()}};
  }
  const Tensor dl = empty({n, experts_}, dy.dtype(), dy.device());
  launch_floating<WithBFloat16::No>(describe().c_str(), dy, [&](auto zero) {
    using T = decltype(zero);
    return kernels::RouterBackward<T>{ptr_or_null<T>(dweights), saved.weights.ptr<T>(), saved.indices.ptr<int64_t>(),
                                      ptr_or_null<T>(saved.probs), ptr_or_null<T>(saved.lse),
                                      ptr_or_null<T>(saved.shares), ptr_or_null<T>(dbalance), ptr_or_null<T>(dz),
                                      dl.ptr<T>(), n, experts_, top_k_, score_ == RouterScore::Sigmoid};
  });
  Tensor dx = math::matmul(dl, false, saved.weight, false).view(dy.shape());
  math::add_(dx, dy);
  const Tensor dw = ctx.params_require_grad.at(0) ? math::matmul(dl, true, saved.input, false) : Tensor();
  return {dx, {}, {dw}};
}

}  // namespace fuselab
