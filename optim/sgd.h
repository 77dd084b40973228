// Stochastic gradient descent with momentum, Nesterov momentum and (coupled) weight decay,
// following PyTorch's torch.optim.SGD:
//   g = grad + wd * p
//   b = momentum * b + g            (b = g on the first step)
//   g = nesterov ? g + momentum * b : b      (when momentum > 0)
//   p = p - lr * g
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace fuselab {

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

class SGD {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  void step();  // parameters without a grad are skipped
  void zero_grad();
  const SGDOptions& options() const { return options_; }

 private:
  std::vector<Tensor> params_;
  std::vector<Tensor> momentum_buffers_;
  SGDOptions options_;
};

}  // namespace fuselab
