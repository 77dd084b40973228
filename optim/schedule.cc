#include "optim/schedule.h"

#include <cmath>

#include "tensor/error.h"

namespace fuselab {

double cosine_with_warmup(int64_t step, int64_t warmup, int64_t total, double base_lr, double min_lr) {
  check(step >= 0 && warmup >= 0 && total >= warmup, "cosine_with_warmup: needs 0 <= step, 0 <= warmup <= total, got ",
        step, ", ", warmup, ", ", total);
  if (step < warmup) return base_lr * double(step + 1) / double(warmup);
  if (step >= total || total == warmup) return min_lr;
  const double progress = double(step - warmup) / double(total - warmup);
  return min_lr + (base_lr - min_lr) * 0.5 * (1 + std::cos(M_PI * progress));
}

}  // namespace fuselab
