// A user-defined basic op and user-defined forward and backward fusions, registered from user
// code through the same calls the built-in fusions use, then checked fused against unfused.
//
//   bazel run //examples:custom_fusion
//
// The op (Square, y = x^2) and the fusions (ForwardLinearSquare: x W^T squared while the GEMM
// output is hot; BackwardSquareScale: Square then ConstantScale in one pass, dx = 2 s x dy) are in
// examples/square_fusions.cc; the model, Linear, Square, ConstantScale, is in examples/models.cc.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "autograd/functional.h"
#include "examples/models.h"
#include "examples/square_fusions.h"
#include "fuser/sequential.h"
#include "tensor/factories.h"

using namespace fuselab;

struct Result {
  std::vector<float> y, dx, dw;
};

Result run(Sequential& seq, const Tensor& x_value) {
  Tensor x = x_value.clone();
  x.set_requires_grad(true);
  seq.zero_grad();
  const Tensor y = seq(x);
  backward(sum(y));
  return {y.to_vector<float>(), x.grad().to_vector<float>(), seq.parameters()[0].grad().to_vector<float>()};
}

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])) / (1e-6 + std::abs(b[i])));
  return worst;
}

int main() {
  manual_seed(0);
  Sequential seq = examples::custom_fusion_model({}, default_generator());  // Linear(8, 8), Square, ConstantScale(0.5)
  std::printf("Before registering the user fusions:\n%s\n\n", seq.describe().c_str());
  examples::register_square_fusions();
  std::printf("After:\n%s\n\n", seq.describe().c_str());

  const Tensor x = randn({16, 8});
  const Result fused = run(seq, x);
  seq.set_fusion_switches(false);
  const Result unfused = run(seq, x);
  const double worst = std::max({max_difference(fused.y, unfused.y), max_difference(fused.dx, unfused.dx),
                                 max_difference(fused.dw, unfused.dw)});
  std::printf("fused vs unfused, max relative difference over y, dx, dW: %.2e\n", worst);
  if (worst > 1e-5) {
    std::printf("MISMATCH\n");
    return 1;
  }
  std::printf("fused and unfused agree\n");
  return 0;
}
