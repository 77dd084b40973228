// Router: a mixture of experts' choice of experts for each row of x [..., width] (its rows: x
// viewed as [-1, width]), which it passes on unchanged; the choice goes out as two extra outputs
// of x's leading dims and k, the routing weights (x's dtype) and the expert indices (int64):
//   logits = x W^T [rows, E], W [E, width] a parameter; each row's k largest logits (ties to the
//   lower expert) weighted by the score:
//     Softmax      a softmax over those k (Mixtral's softmax over all E, top-k, renormalized to
//                  sum 1: the same numbers);
//     SoftmaxAll   the softmax over all E at each of the k, not renormalized (Switch
//                  Transformer's, Qwen-MoE's norm_topk_prob=False): with top-1 the weight is the
//                  expert's probability, not 1, so the main loss trains the router too;
//     Sigmoid      the sigmoid of each (no renormalization);
//   backward: dlogits from the weights' grads (the indices get none), dx = dy + dlogits W,
//   dW = dlogits^T x.
// With losses on, two more extra outputs, scalars of x's dtype, for the caller to add to its loss:
// the load-balancing loss (Switch, Mixtral) and the z-loss (ST-MoE). The top-k, the weights, the
// losses and their grads are one fused kernel on x's device, where their math is written:
// kernels/router.h. A bfloat16 router (x and W) computes all of it in float32, from the logits on,
// and rounds only its outputs (Mixtral's routing weights are cast to the hidden states' dtype too).
#pragma once

#include "kernels/router.h"
#include "ops/basic_op.h"
#include "tensor/random.h"

namespace fuselab {

using kernels::RouterScore;  // Softmax, SoftmaxAll, Sigmoid

struct RouterSaved {  // on x's device, in its compute dtype (float32 for bfloat16; the indices int64)
  Tensor input;    // [rows, width]
  Tensor weight;   // [E, width]
  Tensor weights;  // [rows, k]
  Tensor indices;  // [rows, k]
  Tensor probs;    // for SoftmaxAll or the losses: softmax(logits) [rows, E]
  Tensor lse;      // for SoftmaxAll or the losses: log-sum-exp of each row's logits [rows]
  Tensor shares;   // with losses: f [E]
  NamedTensors tensors() const {
    return {{"input", input}, {"weight", weight}, {"weights", weights}, {"indices", indices},
            {"probs", probs},  {"lse", lse},       {"shares", shares}};
  }
};

class Router : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
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
  int64_t width_, experts_, top_k_;
  RouterScore score_;
  bool losses_;
};

}  // namespace fuselab
