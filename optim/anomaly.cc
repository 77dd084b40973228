#include "optim/anomaly.h"

#include <cmath>

#include "tensor/finite.h"

namespace fuselab {

void check_finite_loss(const std::string& who, double loss, int64_t step) {
  check(std::isfinite(loss), who, ": the loss is ", loss, " at step ", step,
        "; stopping (a learning rate too high, or bad data or weights)");
}

void check_finite_grads(const std::string& who, const NamedTensors& params, int64_t step) {
  for (const auto& [name, param] : params) {
    const Tensor grad = param.grad();
    if (!grad.defined()) continue;
    const int64_t bad = count_non_finite(grad);
    check(bad == 0, who, ": the grad of ", name, " ", grad.shape(), " holds ", bad, " NaN or infinite value(s) at step ",
          step, "; stopping");
  }
}

}  // namespace fuselab
