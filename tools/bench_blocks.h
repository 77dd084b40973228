// The bench's figures for the blocks, against the machine's limits: mlp_block's and moe_block's
// GEMMs alone (the floor a fused block can approach) and their GEMM work as TFLOP/s and a share of
// the FMA peak; norm_block's minimum bytes as a share of the copy bandwidth; and --model rmsnorm,
// RMSNorm's forward and backward alone (the op's own calls, no tape) beside a copy of the same
// tensor, in GB/s.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "tensor/tensor.h"
#include "tools/bench_timing.h"

namespace fuselab::bench {

// A block's GEMMs, as its ops call them, with nothing else: the floor its fused form can approach.
//   mlp_block (N tokens, F = 4H): forward h = x W1^T [N, F], y = h W2^T [N, H];
//     backward dh = dy W2, dW2 = dy^T h, dx = dh W1, dW1 = dh^T x
//   moe_block: the same six for every expert at once, as its GroupedLinears call them (grouped
//     products, math::grouped_matmul_into), over the rows the block's router gives each expert on
//     the bench's batch; the first GEMM's output is the gate and up halves [rows, 2 hidden].
struct BlockGemms {
  std::function<void()> run;  // one forward's and backward's GEMMs
  double flops = 0;           // theirs: 2 per multiply-add
  Device device;

  double time();  // milliseconds for a run
};

// The GEMMs of `model` (mlp_block or moe_block; none for the others) built as `seq` (its router's
// weights, for moe_block) on its batch's input, from random operands, seeded.
std::optional<BlockGemms> block_gemms(const std::string& model, const ModelSizes& sizes, DType dtype, Device device,
                                      Sequential& seq, const Tensor& input);

// RMSNorm's passes and a copy of the same bytes, as the GPU bandwidth target counts them.
struct Bandwidth {
  int64_t tokens, hidden;
  TimeStats forward, backward, copy;  // ms
  std::optional<double> memory_gbps;  // the machine's copy bandwidth (CPU only)
  double bytes(int64_t tensors) const { return double(tensors) * double(tokens * hidden) * sizeof(float); }
  double gbps(const TimeStats& s, int64_t tensors) const { return bytes(tensors) / (s.median * 1e6); }
};

Bandwidth measure_bandwidth(int64_t tokens, int64_t h, Device device, int iters);

// The GEMM work of one forward + backward (r.gemm_flops) over a time, in TFLOP/s.
double gemm_tflops(const Result& r, const TimeStats& time);

// The limits the table's runs are put against, measured once per run on the CPU (none on CUDA):
// the FMA peak for the blocks with GEMMs alone (has_block_gemms), the copy bandwidth for norm_block.
struct Limits {
  std::optional<double> fma_peak_gflops;  // one core's
  std::optional<double> memory_gbps, threads;
};

// Whether block_gemms has the model's GEMMs (mlp_block, moe_block).
bool has_block_gemms(const std::string& model);
Limits measure_limits(const BenchModel& model, Device device);

// One run against the limits; each share is empty where it does not apply.
struct AgainstLimits {
  // mlp_block, moe_block in float32 (the peak is float32's FMA): GEMM FLOP/s over (peak x threads),
  // fused and for the GEMMs alone, and the share of the fused forward + backward outside the GEMMs
  // (1 - GEMMs alone / fused).
  std::optional<double> fraction_of_peak, gemms_fraction_of_peak, outside_gemms_fraction;
  // norm_block: minimum bytes per pass and their rate over the copy bandwidth, for forward, backward
  // and the two together. The backward's time is forward + backward less forward, so it includes
  // the loss (the mean squared error: two passes over the output) and its grad (one pass).
  std::optional<double> forward_bytes, backward_bytes, forward_fraction_of_memory, backward_fraction_of_memory,
      fwd_bwd_fraction_of_memory;
};

AgainstLimits against_limits(const Result& r, const Limits& limits);

}  // namespace fuselab::bench
