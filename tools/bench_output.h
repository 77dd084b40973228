// What the bench prints and writes: the fused-against-unfused table and its JSON, the per-fusion
// report and its JSON, RMSNorm's bandwidth line and JSON, and a bar chart of speedups as SVG. The
// field names are read by scripts and docs (docs/benchmarking.md); keep them.
#pragma once

#include <string>
#include <vector>

#include "fuser/fusion_report.h"
#include "tools/bench_blocks.h"
#include "tools/bench_timing.h"

namespace fuselab::bench {

void print_table(const std::vector<Result>& results, const Limits& limits);
void write_json(const std::string& path, const std::vector<Result>& results, const Limits& limits);

void print_fusion_reports(const std::string& model, const ModelSizes& sizes, const FusionReport& report);
void write_fusion_json(const std::string& path, const std::string& model, const ModelSizes& sizes,
                       const std::string& device, const std::string& dtype, const FusionReport& report);

void print_bandwidth(const Bandwidth& r);
void write_bandwidth_json(const std::string& path, const Bandwidth& r, const std::string& device);

struct Bar {
  double speedup;
  std::string label, sublabel;
};

// A bar chart of forward+backward speedups, as a self-contained SVG; `path` must end in .svg.
void write_svg(const std::string& path, const std::vector<Bar>& bars);

}  // namespace fuselab::bench
