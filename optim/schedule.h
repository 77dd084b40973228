// Learning-rate schedules. With base_lr 1 a schedule gives the factor for
// Optimizer::set_lr_scale, which multiplies every parameter group's own lr, as PyTorch's
// schedulers scale each group's initial lr.
#pragma once

#include <cstdint>

namespace fuselab {

// Linear warmup from 0 to base_lr over `warmup` steps, then a cosine from base_lr down to min_lr
// at `total` steps, and min_lr after:
//   step < warmup:  base_lr * (step + 1) / warmup
//   else:           min_lr + (base_lr - min_lr) * (1 + cos(pi * (step - warmup) / (total - warmup))) / 2
double cosine_with_warmup(int64_t step, int64_t warmup, int64_t total, double base_lr, double min_lr = 0);

}  // namespace fuselab
