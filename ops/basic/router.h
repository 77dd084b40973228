// Router: a mixture of experts' choice of experts for each row of x [..., width] (its rows: x
// viewed as [-1, width]), which it passes on unchanged; the choice goes out as two extra outputs
// of x's leading dims and k, the routing weights (x's dtype) and the expert indices (int64):
//   logits = x W^T  [rows, E]                          W [E, width], a parameter
//   softmax scores: the k largest logits of each row, weights = softmax over those k (Mixtral's
//                   softmax over all E, top-k, renormalized to sum 1: the same numbers)
//   sigmoid scores: the k largest logits, weights = sigmoid of each (no renormalization)
// Ties go to the lower expert index. Backward (the indices get no grad): with g = dweights,
//   softmax: dlogits[i_j] = w_j (g_j - sum_j' w_j' g_j'),   sigmoid: dlogits[i_j] = g_j w_j (1 - w_j),
// 0 for the experts not chosen; dx = dy + dlogits W, dW = dlogits^T x.
// With losses on, two more extra outputs, scalars of x's dtype, for the caller to add to its loss:
//   load balancing (Switch, Mixtral):  E sum_e f_e P_e,  f_e the fraction of the rows k copies that
//                                      go to expert e (no grad), P_e the mean over rows of
//                                      softmax(logits)_e;  dlogits_r += g (E / rows) p_r (f - <p_r, f>)
//   z-loss (ST-MoE):                   mean over rows of lse(logits_r)^2;  dlogits_r += g (2 / rows) lse_r p_r
// (both 0 over no rows). The logits' GEMMs run on x's device; the top-k and its backward run on the CPU (the logits, the
// weights and their grads go there and back: [rows, E] and [rows, k] numbers).
#pragma once

#include "ops/basic_op.h"
#include "tensor/random.h"

namespace fuselab {

enum class RouterScore { Softmax, Sigmoid };

struct RouterSaved {
  Tensor input;    // [rows, width]
  Tensor weight;   // [E, width]
  Tensor weights;  // [rows, k], on the CPU, float64
  Tensor indices;  // [rows, k], on the CPU
  Tensor probs;    // with losses: softmax(logits) [rows, E], on the CPU, float64
  Tensor lse;      // with losses: log-sum-exp of each row's logits [rows]
  Tensor shares;   // with losses: f [E]
  NamedTensors tensors() const {
    return {{"input", input}, {"weight", weight}, {"weights", weights}, {"indices", indices},
            {"probs", probs},  {"lse", lse},       {"shares", shares}};
  }
};

class Router : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }  // tensor_math and the CPU
  // W ~ U(-1/sqrt(width), 1/sqrt(width)), as Linear's.
  Router(int64_t width, int64_t experts, int64_t top_k, RouterScore score = RouterScore::Softmax,
         Generator* gen = nullptr, bool losses = false);
  // The weights, the indices, and with losses the load-balancing loss and the z-loss.
  int num_extra_outputs() const override { return losses_ ? 4 : 2; }
  bool extra_output_differentiable(int slot) const override { return slot != 1; }
  int64_t experts() const { return experts_; }
  int64_t top_k() const { return top_k_; }
  Tensor& weight() { return parameter(0); }

  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>& grad_extra) override;

 private:
  void add_loss_grads(const RouterSaved& saved, const Tensor& dbalance, const Tensor& dz,
                      std::vector<double>& dlogits) const;
  int64_t width_, experts_, top_k_;
  RouterScore score_;
  bool losses_;
};

}  // namespace fuselab
