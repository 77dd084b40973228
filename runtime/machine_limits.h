// The machine's limits, measured in the process that reports against them: one core's float32
// FMA peak and the memory's copy bandwidth. //tools:bench and the training programs divide what a
// run achieved by these, as llm.c's napkin math does: a GEMM-bound run against FLOP/s, a row loop
// against bytes/s.
#pragma once

#include <optional>

namespace fuselab::runtime {

// GFLOP/s of one core running float32 FMAs (two flops each) in AVX-512, or AVX2 where the CPU
// lacks it or FUSELAB_DISABLE_AVX512=1, picked at run time as kernels/cpu/isa.h does; empty on a
// CPU with neither AVX2 nor FMA. The best of several short runs.
std::optional<double> fma_peak_gflops();

// GB/s of a memcpy split over `threads` threads of a buffer four times the last-level cache,
// counting each byte once read and once written: what a streaming kernel can reach at best.
double copy_bandwidth_gbps(int threads);

}  // namespace fuselab::runtime
