// Stochastic gradient descent with momentum, Nesterov momentum and (coupled) weight decay,
// following PyTorch's torch.optim.SGD:
//   g = grad + wd * p
//   b = momentum * b + g            (b = g on the first step)
//   g = nesterov ? g + momentum * b : b      (when momentum > 0)
//   p = p - lr * g
#pragma once

#include "optim/optimizer.h"

namespace fuselab {

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  // options.lr and options.weight_decay are the defaults of the groups that leave them unset.
  SGD(std::vector<ParamGroup> groups, SGDOptions options);
  SGD(std::vector<Tensor> params, SGDOptions options)
      : SGD(std::vector<ParamGroup>{{std::move(params)}}, options) {}

 private:
  void update(const GroupHyper& group, const std::vector<size_t>& stepped,
              const std::vector<Tensor>& grads) override;
  std::vector<std::string> buffer_names() const override { return {"momentum_buffer"}; }
  SGDOptions options_;
};

}  // namespace fuselab
