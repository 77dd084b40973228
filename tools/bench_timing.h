// The bench's timing of a whole model fused against unfused: both built from the same seed, called
// interleaved (A B A B ...) after a warm-up, forward alone, forward + backward from the model's loss,
// and with --step a training step; the median, min and max of each, and the allocator's peak.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fuser/fusion_report.h"  // TimeStats
#include "tools/bench_models.h"

namespace fuselab::bench {

struct Result {
  std::string model, device, dtype;
  size_t element_bytes;
  int64_t tokens, hidden;
  std::map<std::string, int64_t> sizes;  // the model's own size flags
  TimeStats fused_fwd, unfused_fwd, fused_fwd_bwd, unfused_fwd_bwd;
  size_t fused_peak, unfused_peak;
  std::optional<TimeStats> gemms;                     // the block's GEMMs alone (bench_blocks.h)
  double gemm_flops = 0;                              // theirs, per forward + backward
  std::optional<TimeStats> fused_step, unfused_step;  // with --step
  int micro_batches = 0;                          // per step, with --step
};

// `step`: the training step's micro-batches, or 0 to leave the step out. For mlp_block and
// moe_block it also times the block's GEMMs alone (bench_blocks.h), interleaved with the rest.
Result measure(const BenchModel& model, const ModelSizes& sizes, DType dtype, Device device, int iters, int step);

}  // namespace fuselab::bench
