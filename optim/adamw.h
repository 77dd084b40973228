// AdamW (Loshchilov & Hutter): Adam with decoupled weight decay, as torch.optim.AdamW.
//   p = p - lr * wd * p
//   m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
//   p = p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
#pragma once

#include "optim/optimizer.h"

namespace fuselab {

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
};

class AdamW : public Optimizer {
 public:
  // options.lr and options.weight_decay are the defaults of the groups that leave them unset.
  AdamW(std::vector<ParamGroup> groups, AdamWOptions options);
  AdamW(std::vector<Tensor> params, AdamWOptions options)
      : AdamW(std::vector<ParamGroup>{{std::move(params)}}, options) {}

 private:
  void update(const GroupHyper& group, const std::vector<size_t>& stepped,
              const std::vector<Tensor>& grads) override;
  std::vector<std::string> buffer_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  std::vector<std::string> non_negative_buffers() const override { return {"exp_avg_sq"}; }
  AdamWOptions options_;
};

}  // namespace fuselab
