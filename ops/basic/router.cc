#include "ops/basic/router.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tensor/factories.h"
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
  const std::vector<double> logits =
      math::matmul(rows, false, weight(), true).to(Device::cpu()).to(DType::Float64).to_vector<double>();
  std::vector<double> weights(size_t(n * k));
  std::vector<int64_t> indices(size_t(n * k));
  std::vector<int64_t> order(static_cast<size_t>(experts_), 0);
  for (int64_t r = 0; r < n; ++r) {
    const double* row = logits.data() + r * experts_;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [row](int64_t a, int64_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    double* w = weights.data() + r * k;
    for (int64_t j = 0; j < k; ++j) indices[size_t(r * k + j)] = order[size_t(j)];
    if (score_ == RouterScore::Sigmoid) {
      for (int64_t j = 0; j < k; ++j) w[j] = 1 / (1 + std::exp(-row[order[size_t(j)]]));
    } else {  // softmax over the chosen k, the largest first
      double total = 0;
      for (int64_t j = 0; j < k; ++j) total += w[j] = std::exp(row[order[size_t(j)]] - row[order[0]]);
      for (int64_t j = 0; j < k; ++j) w[j] /= total;
    }
  }
  const Tensor host_weights = from_vector<double>(weights, {n, k}), host_indices = from_vector<int64_t>(indices, {n, k});
  RouterSaved saved{rows, weight(), host_weights, host_indices};
  Shape choice_shape = x.shape();  // x's leading dims and k
  choice_shape.back() = k;
  OpForward out{x, {host_weights.to(x.dtype()).to(x.device()).view(choice_shape), host_indices.to(x.device()).view(choice_shape)}};
  if (losses_) {
    std::vector<double> probs(static_cast<size_t>(n * experts_), 0.0), lse(static_cast<size_t>(n), 0.0),
        shares(static_cast<size_t>(experts_), 0.0);
    double balance = 0, z = 0;
    for (int64_t r = 0; r < n; ++r) {
      const double* row = logits.data() + r * experts_;
      const double top = *std::max_element(row, row + experts_);
      double total = 0;
      for (int64_t e = 0; e < experts_; ++e) total += probs[size_t(r * experts_ + e)] = std::exp(row[e] - top);
      for (int64_t e = 0; e < experts_; ++e) probs[size_t(r * experts_ + e)] /= total;
      lse[size_t(r)] = top + std::log(total);
      z += lse[size_t(r)] * lse[size_t(r)] / double(n);
    }
    for (const int64_t e : indices) shares[size_t(e)] += 1.0 / double(n * k);
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t e = 0; e < experts_; ++e) {
        balance += double(experts_) * shares[size_t(e)] * probs[size_t(r * experts_ + e)] / double(n);
      }
    }
    saved.probs = from_vector<double>(probs, {n, experts_});
    saved.lse = from_vector<double>(lse, {n});
    saved.shares = from_vector<double>(shares, {experts_});
    for (const double loss : {balance, z}) {
      out.extra_outputs.push_back(from_vector<double>({loss}, {}).to(x.dtype()).to(x.device()));
    }
  }
  if (ctx.requires_backward()) ctx.save<RouterSaved>() = saved;
  return out;
}

// The auxiliary losses' grads into dlogits (see router.h).
void Router::add_loss_grads(const RouterSaved& saved, const Tensor& dbalance, const Tensor& dz,
                            std::vector<double>& dlogits) const {
  const int64_t n = saved.probs.size(0);
  const double g_balance = dbalance.defined() ? dbalance.to(Device::cpu()).to(DType::Float64).item() : 0;
  const double g_z = dz.defined() ? dz.to(Device::cpu()).to(DType::Float64).item() : 0;
  const std::vector<double> p = saved.probs.to_vector<double>(), lse = saved.lse.to_vector<double>();
  const std::vector<double> f = saved.shares.to_vector<double>();
  for (int64_t r = 0; r < n; ++r) {
    const double* pr = p.data() + r * experts_;
    double pf = 0;
    for (int64_t e = 0; e < experts_; ++e) pf += pr[e] * f[size_t(e)];
    for (int64_t e = 0; e < experts_; ++e) {
      dlogits[size_t(r * experts_ + e)] += g_balance * double(experts_) / double(n) * pr[e] * (f[size_t(e)] - pf) +
                                           g_z * 2.0 / double(n) * lse[size_t(r)] * pr[e];
    }
  }
}

OpBackward Router::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>& grad_extra) {
  const RouterSaved& saved = ctx.saved<RouterSaved>(describe());
  const int64_t n = saved.input.size(0), k = top_k_;
  const Tensor& dweights = grad_extra.at(0);  // each undefined when nothing used its output
  const Tensor dbalance = losses_ ? grad_extra.at(2) : Tensor(), dz = losses_ ? grad_extra.at(3) : Tensor();
  if (!dweights.defined() && !dbalance.defined() && !dz.defined()) {
    return {dy, {}, {ctx.params_require_grad.at(0) ? zeros_like(saved.weight) : Tensor()}};
  }
  const std::vector<double> g = dweights.defined() ? dweights.to(Device::cpu()).to(DType::Float64).to_vector<double>()
                                                   : std::vector<double>(size_t(n * k), 0.0);
  const std::vector<double> w = saved.weights.to_vector<double>();
  const std::vector<int64_t> indices = saved.indices.to_vector<int64_t>();
  std::vector<double> dlogits(size_t(n * experts_), 0.0);
  if (dbalance.defined() || dz.defined()) add_loss_grads(saved, dbalance, dz, dlogits);
  for (int64_t r = 0; r < n; ++r) {
    double weighted = 0;
    for (int64_t j = 0; j < k; ++j) weighted += w[size_t(r * k + j)] * g[size_t(r * k + j)];
    for (int64_t j = 0; j < k; ++j) {
      const double wj = w[size_t(r * k + j)], gj = g[size_t(r * k + j)];
      dlogits[size_t(r * experts_ + indices[size_t(r * k + j)])] +=
          score_ == RouterScore::Softmax ? wj * (gj - weighted) : gj * wj * (1 - wj);
    }
  }
  const Tensor dl = from_vector<double>(dlogits, {n, experts_}).to(dy.dtype()).to(dy.device());
  Tensor dx = math::matmul(dl, false, saved.weight, false).view(dy.shape());
  math::add_(dx, dy);
  const Tensor dw = ctx.params_require_grad.at(0) ? math::matmul(dl, true, saved.input, false) : Tensor();
  return {dx, {}, {dw}};
}

}  // namespace fuselab
