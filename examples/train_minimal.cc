// The smallest complete FuseLab training program: an MLP learns y = sin(3x) on [-1, 1].
// It links the one library target //:fuselab and nothing else:
//
//   cc_binary(name = "train_minimal", srcs = ["train_minimal.cc"], deps = ["//:fuselab"])
//   bazel run -c opt //examples:train_minimal
//
// One training step is: forward through the fused Sequential, the loss, backward (one tape node
// for the whole model), clip, optimizer step.
#include <cmath>
#include <cstdio>
#include <vector>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/linear.h"
#include "optim/adamw.h"
#include "optim/clip.h"
#include "tensor/factories.h"

using namespace fuselab;

int main() {
  Generator gen(0);
  const int64_t n = 256;
  std::vector<float> xs(n), ys(n);
  for (int64_t i = 0; i < n; ++i) {
    xs[i] = float(2.0 * gen.uniform() - 1.0);
    ys[i] = std::sin(3.0f * xs[i]);
  }
  const Tensor x = from_vector<float>(xs, {n, 1}), y = from_vector<float>(ys, {n, 1});

  Sequential model;  // Linear+Bias+GELU pairs fuse into ForwardLinearBiasActivation
  model.append(linear_with_bias(1, 64, &gen)).append(std::make_shared<GELU>());
  model.append(linear_with_bias(64, 64, &gen)).append(std::make_shared<GELU>());
  model.append(linear_with_bias(64, 1, &gen));
  std::printf("%s\n", model.describe().c_str());

  AdamW optimizer(model.parameters(), {1e-2});
  double first = 0, last = 0;
  for (int step = 1; step <= 500; ++step) {
    optimizer.zero_grad();
    const Tensor loss = mse(model(x), y);
    backward(loss);
    clip_grad_norm(model.parameters(), 1.0);
    optimizer.step();
    last = loss.item();
    if (step == 1) first = last;
    if (step % 100 == 0) std::printf("step %3d  mse %.5f\n", step, last);
  }
  std::printf("mse %.5f after 500 steps (%.5f at the first)\n", last, first);
  return last < first / 20 ? 0 : 1;  // it learned, or the program says it did not
}
