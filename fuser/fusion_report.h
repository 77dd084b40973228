// The fusion report of a Sequential: for each registered fusion that fires on it, that fusion alone
// against fusion off, in forward + backward time, the bytes held between forward and backward and
// the kernel launches. It tells which fusion earns its place on this model, this device and dtype.
//
//   const FusionReport report = report_fusions(seq, x, {residual}, [&](const SequentialOutput& out) {
//     return mse(out.output, target);
//   });
//   for (const FusionMeasurement& m : report.fusions) std::printf("%s %.2fx\n", m.fusion.c_str(), m.speedup());
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fuser/sequential.h"

namespace fuselab {

// Milliseconds over timed iterations.
struct TimeStats {
  double median = 0, min = 0, max = 0;
};
TimeStats time_stats(std::vector<double> ms);

// One fusion alone against fusion off, on the same ops, parameters and inputs.
struct FusionMeasurement {
  std::string fusion;                       // its registered name
  std::vector<std::string> fused_entries;  // the fused ops it made alone, "ForwardLinearBiasAdd(linear1, ...)"
  TimeStats alone_ms, off_ms;               // forward + loss + backward
  size_t alone_held_bytes = 0, off_held_bytes = 0;  // in use after forward, above before it: saved state and outputs
  uint64_t alone_launches = 0, off_launches = 0;    // launch() calls in one forward + loss + backward
  double speedup() const { return off_ms.median / alone_ms.median; }
};

struct FusionReport {
  std::string all_fusions;                  // describe() with the Sequential's own switches
  std::vector<FusionMeasurement> fusions;  // in registry order
};

struct FusionReportOptions {
  int warmup = 3;  // untimed forward + backward calls of each variant first
  int iters = 20;  // timed calls of each, interleaved (alone, off, alone, ...) so drift hits both alike
};

// The scalar a backward starts from, from the Sequential's output: the model's loss.
using LossOf = std::function<Tensor(const SequentialOutput&)>;

// Measures each registered fusion that fires on `seq` with its switches as they are (and the
// global ones): a fusion that fires only alone, where another takes its ops first, would be
// measured for a model nobody runs. Each variant runs on a slice of `seq` sharing its ops and
// parameters, so `seq`'s own switches and fused lists are left as they were. Grads are cleared after
// each call, the inputs' among them. Throws fuselab::Error if the loss is not a defined scalar.
FusionReport report_fusions(Sequential& seq, const Tensor& input, const std::vector<Tensor>& extra_inputs,
                            const LossOf& loss, const FusionReportOptions& options = {});

// The fused ops of a Sequential's two lists, each once (a joint op is in both), described.
std::vector<std::string> fused_entries(Sequential& seq);

}  // namespace fuselab
