// The CPU norm backward kernels' rows, compiled for baseline x86-64 and for AVX-512 (isa.h), agree,
// with and without the residual's grad. On a CPU without
// AVX-512 both runs take the baseline rows and the test cannot fail; the float64 op cases check
// the rows the CPU does run against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/host_context.h"
#include "tests/isa_copies.h"
#include "kernels/norms.h"

namespace fuselab::kernels {
namespace {

std::vector<float> values(size_t n, float scale, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * std::sin(0.37f * float(i) + float(seed));
  return v;
}

struct Grads {
  std::vector<float> dx, dw, db;
};

Grads run_backward(bool layer_norm, bool residual) {
  constexpr int64_t rows = 37, cols = 203;
  const std::vector<float> x = values(rows * cols, 2, 1), w = values(cols, 1, 2), rg = values(rows * cols, 1, 3);
  const std::vector<float> dy = values(rows * cols, 1, 4);
  const std::vector<float> mean = values(rows, 0.1f, 5), rstd = values(rows, 0.5f, 6);
  Grads g{std::vector<float>(rows * cols), std::vector<float>(cols), std::vector<float>(cols)};
  cpu::HostContext ctx;
  const float* residual_grad = residual ? rg.data() : nullptr;
  if (layer_norm) {
    LayerNormBackward<float>{x.data(),   w.data(),    mean.data(), rstd.data(), dy.data(), residual_grad,
                             g.dx.data(), g.dw.data(), g.db.data(), rows,        cols}
        .cpu(ctx);
  } else {
    RMSNormBackward<float>{x.data(),    w.data(),    rstd.data(), dy.data(), residual_grad,
                           g.dx.data(), g.dw.data(), rows,        cols}
        .cpu(ctx);
  }
  return g;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5f * (1 + std::abs(b[i]))) << what << " at " << i;
}

TEST(NormKernels, EveryInstructionSetsBackwardRowsAgree) {
  for (bool layer_norm : {false, true}) {
    for (bool residual : {false, true}) {
      const std::string what = std::string(layer_norm ? "LayerNorm" : "RMSNorm") + (residual ? " with the residual's grad" : "");
      const Grads plain = testing::with_isa(testing::kIsaCopies[0], [&] { return run_backward(layer_norm, residual); });
      for (const testing::IsaCopy& copy : testing::kIsaCopies) {
        const Grads fast = testing::with_isa(copy, [&] { return run_backward(layer_norm, residual); });
        expect_close(fast.dx, plain.dx, what + " dx, " + copy.name);
        expect_close(fast.dw, plain.dw, what + " dw, " + copy.name);
        if (layer_norm) expect_close(fast.db, plain.db, what + " db, " + copy.name);
      }
    }
  }
}

}  // namespace
}  // namespace fuselab::kernels
