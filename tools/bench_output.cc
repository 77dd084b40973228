#include "tools/bench_output.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

namespace fuselab::bench {

namespace {

// A number, or null where it was not measured (or is not finite: JSON has no infinity).
std::string json_number(std::optional<double> value) {
  if (!value || !std::isfinite(*value)) return "null";
  char text[32];
  std::snprintf(text, sizeof(text), "%.10g", *value);
  return text;
}

std::optional<double> ratio(double numerator, std::optional<double> denominator) {
  if (!denominator) return std::nullopt;
  return numerator / *denominator;
}

// Output goes through the stream's buffer; a full disk shows only when it is flushed.
void check_written(std::ofstream& out, const std::string& path) {
  out.flush();
  check(out.good(), "bench: writing ", path, " failed: ", std::strerror(errno));
}

// " (context 8, embed 24, blocks 2)": a model's own sizes, for a report's heading; "" for none.
std::string sizes_text(const std::map<std::string, int64_t>& sizes) {
  std::string text;
  for (const auto& [name, value] : sizes) text += (text.empty() ? " (" : ", ") + name + " " + std::to_string(value);
  return text.empty() ? text : text + ")";
}

// {"context": 8, "embed": 24}: the same, as a JSON object.
std::string sizes_json(const std::map<std::string, int64_t>& sizes) {
  std::string json;
  for (const auto& [name, value] : sizes) json += (json.empty() ? "" : ", ") + ("\"" + name + "\": ") + std::to_string(value);
  return "{" + json + "}";
}

// A JSON string: op descriptions are names, parentheses and commas, but quote them properly anyway.
std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// "48%", or "-" where the share was not measured.
std::string percent(std::optional<double> share) {
  if (!share) return "-";
  char text[16];
  std::snprintf(text, sizeof(text), "%.0f%%", 100 * *share);
  return text;
}

void print_against_limits(const Result& r, const Limits& limits) {
  const AgainstLimits a = against_limits(r, limits);
  if (a.fraction_of_peak) {
    std::printf("%s %lldx%lld: fused fwd+bwd runs its GEMM work at %.0f%% of the FMA peak (%.1f GFLOP/s a core x %d "
                "threads; the GEMMs alone: %.0f%%) and spends %.0f%% of its time outside the GEMMs\n",
                r.model.c_str(), (long long)r.tokens, (long long)r.hidden, 100 * *a.fraction_of_peak,
                *limits.fma_peak_gflops, int(*limits.threads), 100 * *a.gemms_fraction_of_peak, 100 * *a.outside_gemms_fraction);
  }
  if (a.forward_bytes) {
    std::printf("%s %lldx%lld: fused forward moves at least %.1f MB at %s of the copy bandwidth (%.1f GB/s), "
                "backward %.1f MB at %s, forward + backward %s\n",
                r.model.c_str(), (long long)r.tokens, (long long)r.hidden, *a.forward_bytes / 1e6,
                percent(a.forward_fraction_of_memory).c_str(), *limits.memory_gbps, *a.backward_bytes / 1e6,
                percent(a.backward_fraction_of_memory).c_str(), percent(a.fwd_bwd_fraction_of_memory).c_str());
  }
}

std::optional<double> step_median(const std::optional<TimeStats>& step) {
  if (!step) return std::nullopt;
  return step->median;
}

std::string speedup_label(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2fx", s);
  return text;
}

}  // namespace

void print_bandwidth(const Bandwidth& r) {
  const double copy = r.gbps(r.copy, 2), fwd = r.gbps(r.forward, 2), bwd = r.gbps(r.backward, 3);
  std::printf("rmsnorm %lldx%lld float32: forward %.3f ms = %.1f GB/s (%.0f%% of copy), backward %.3f ms = %.1f GB/s "
              "(%.0f%% of copy), copy %.3f ms = %.1f GB/s\n",
              (long long)r.tokens, (long long)r.hidden, r.forward.median, fwd, 100 * fwd / copy, r.backward.median, bwd,
              100 * bwd / copy, r.copy.median, copy);
  if (r.memory_gbps) {
    std::printf("rmsnorm against the memory's copy bandwidth (%.1f GB/s): forward %.0f%%, backward %.0f%%\n",
                *r.memory_gbps, 100 * fwd / *r.memory_gbps, 100 * bwd / *r.memory_gbps);
  }
}

void write_bandwidth_json(const std::string& path, const Bandwidth& r, const std::string& device) {
  std::ofstream out(path);
  check(out.good(), "bench: cannot write ", path);
  const double copy = r.gbps(r.copy, 2);
  out << "[\n  {\"model\": \"rmsnorm\", \"device\": \"" << device << "\", \"dtype\": \"float32\", \"tokens\": "
      << r.tokens << ", \"hidden\": " << r.hidden << ", \"forward_ms\": " << r.forward.median
      << ", \"backward_ms\": " << r.backward.median << ", \"copy_ms\": " << r.copy.median
      << ", \"forward_gbps\": " << r.gbps(r.forward, 2) << ", \"backward_gbps\": " << r.gbps(r.backward, 3)
      << ", \"copy_gbps\": " << copy << ", \"forward_fraction_of_copy\": " << r.gbps(r.forward, 2) / copy
      << ", \"backward_fraction_of_copy\": " << r.gbps(r.backward, 3) / copy
      << ", \"forward_bytes\": " << json_number(r.bytes(2)) << ", \"backward_bytes\": " << json_number(r.bytes(3))
      << ", \"memory_copy_gbps\": " << json_number(r.memory_gbps)
      << ", \"forward_fraction_of_memory\": " << json_number(ratio(r.gbps(r.forward, 2), r.memory_gbps))
      << ", \"backward_fraction_of_memory\": " << json_number(ratio(r.gbps(r.backward, 3), r.memory_gbps)) << "}\n]\n";
  check_written(out, path);
}

void print_fusion_reports(const std::string& model, const ModelSizes& sizes, const FusionReport& result) {
  std::printf("%s %lldx%lld%s with every fusion on:\n%s\n", model.c_str(), (long long)sizes.tokens,
              (long long)sizes.hidden, sizes_text(sizes.extra).c_str(), result.all_fusions.c_str());
  std::printf("each fusion alone against fusion off (forward + backward):\n");
  std::printf("%-30s %8s %12s %12s %8s %14s %14s %9s %9s\n", "fusion", "fused at", "alone ms", "off ms", "speedup",
              "held MB alone", "held MB off", "launches", "off");
  for (const FusionMeasurement& r : result.fusions) {
    std::printf("%-30s %8zu %12.3f %12.3f %7.2fx %14.2f %14.2f %9llu %9llu\n", r.fusion.c_str(), r.fused_entries.size(),
                r.alone_ms.median, r.off_ms.median, r.speedup(), double(r.alone_held_bytes) / 1e6,
                double(r.off_held_bytes) / 1e6, (unsigned long long)r.alone_launches, (unsigned long long)r.off_launches);
  }
}

void write_fusion_json(const std::string& path, const std::string& model, const ModelSizes& sizes,
                       const std::string& device, const std::string& dtype, const FusionReport& result) {
  std::ofstream out(path);
  check(out.good(), "bench: cannot write ", path);
  out << "[\n";
  for (size_t i = 0; i < result.fusions.size(); ++i) {
    const FusionMeasurement& r = result.fusions[i];
    std::string entries;
    for (const std::string& e : r.fused_entries) entries += (entries.empty() ? "" : ", ") + json_string(e);
    out << "  {\"fusion\": \"" << r.fusion << "\", \"model\": \"" << model << "\", \"device\": \"" << device
        << "\", \"dtype\": \"" << dtype << "\", \"tokens\": " << sizes.tokens << ", \"hidden\": " << sizes.hidden
        << ", \"sizes\": " << sizes_json(sizes.extra) << ", \"fused_entries\": [" << entries << "]"
        << ", \"fused_fwd_bwd_ms\": " << r.alone_ms.median << ", \"unfused_fwd_bwd_ms\": " << r.off_ms.median
        << ", \"speedup_fwd_bwd\": " << r.speedup() << ", \"fused_saved_bytes\": " << r.alone_held_bytes
        << ", \"unfused_saved_bytes\": " << r.off_held_bytes << ", \"kernel_launches\": " << r.alone_launches
        << ", \"unfused_kernel_launches\": " << r.off_launches << "}" << (i + 1 < result.fusions.size() ? ",\n" : "\n");
  }
  out << "]\n";
  check_written(out, path);
}

void print_table(const std::vector<Result>& results, const Limits& limits) {
  std::printf("%-13s %6s %6s | %-24s %-24s | %-26s %-26s | %7s | %-26s %12s | %9s %9s\n", "model", "tokens",
              "hidden", "fused fwd ms (min-max)", "unfused fwd ms", "fused fwd+bwd ms", "unfused fwd+bwd ms", "speedup",
              "GEMMs alone ms", "fused/GEMMs", "fused MB", "unfused MB");
  for (const Result& r : results) {
    auto cell = [](const TimeStats& s) {
      char text[64];
      std::snprintf(text, sizeof(text), "%.3f (%.3f-%.3f)", s.median, s.min, s.max);
      return std::string(text);
    };
    const std::string gemms = r.gemms ? cell(*r.gemms) : "-";
    char ratio[16] = "-";
    if (r.gemms) std::snprintf(ratio, sizeof(ratio), "%.2fx", r.fused_fwd_bwd.median / r.gemms->median);
    std::printf("%-13s %6lld %6lld | %-24s %-24s | %-26s %-26s | %6.2fx | %-26s %12s | %9.1f %9.1f\n",
                r.model.c_str(), (long long)r.tokens, (long long)r.hidden, cell(r.fused_fwd).c_str(),
                cell(r.unfused_fwd).c_str(), cell(r.fused_fwd_bwd).c_str(), cell(r.unfused_fwd_bwd).c_str(),
                r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median, gemms.c_str(), ratio, double(r.fused_peak) / 1e6,
                double(r.unfused_peak) / 1e6);
  }
  for (const Result& r : results) {
    if (r.fused_step) {
      std::printf(
          "%s %lldx%lld: training step (zero_grad, %d x forward, loss, backward, SGD) fused %.3f ms "
          "(%.3f-%.3f), unfused %.3f ms (%.3f-%.3f)\n",
          r.model.c_str(), (long long)r.tokens, (long long)r.hidden, r.micro_batches, r.fused_step->median,
          r.fused_step->min, r.fused_step->max, r.unfused_step->median, r.unfused_step->min, r.unfused_step->max);
    }
    if (r.gemms) {
      std::printf("%s %lldx%lld: fused fwd+bwd runs its GEMM work at %.3f TFLOP/s (the GEMMs alone: %.3f)\n",
                  r.model.c_str(), (long long)r.tokens, (long long)r.hidden, gemm_tflops(r, r.fused_fwd_bwd),
                  gemm_tflops(r, *r.gemms));
    }
    print_against_limits(r, limits);
  }
}

void write_json(const std::string& path, const std::vector<Result>& results, const Limits& limits) {
  std::ofstream out(path);
  check(out.good(), "bench: cannot write ", path);
  out << "[\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    out << "  {\"model\": \"" << r.model << "\", \"device\": \"" << r.device << "\", \"dtype\": \"" << r.dtype
        << "\", \"tokens\": " << r.tokens << ", \"hidden\": " << r.hidden << ", \"sizes\": " << sizes_json(r.sizes)
        << ", \"fused_fwd_ms\": " << r.fused_fwd.median
        << ", \"unfused_fwd_ms\": " << r.unfused_fwd.median << ", \"fused_fwd_bwd_ms\": " << r.fused_fwd_bwd.median
        << ", \"unfused_fwd_bwd_ms\": " << r.unfused_fwd_bwd.median
        << ", \"speedup_fwd_bwd\": " << r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median
        << ", \"fused_peak_bytes\": " << r.fused_peak << ", \"unfused_peak_bytes\": " << r.unfused_peak
        << ", \"gemms_fwd_bwd_ms\": ";
    if (r.gemms) out << r.gemms->median;
    else out << "null";
    out << ", \"fused_fwd_bwd_tflops\": ";
    if (r.gemms) out << gemm_tflops(r, r.fused_fwd_bwd);
    else out << "null";
    const AgainstLimits a = against_limits(r, limits);
    out << ", \"threads\": " << json_number(limits.threads) << ", \"fma_peak_gflops\": " << json_number(limits.fma_peak_gflops)
        << ", \"fraction_of_peak\": " << json_number(a.fraction_of_peak)
        << ", \"gemms_fraction_of_peak\": " << json_number(a.gemms_fraction_of_peak)
        << ", \"outside_gemms_fraction\": " << json_number(a.outside_gemms_fraction)
        << ", \"memory_copy_gbps\": " << json_number(limits.memory_gbps)
        << ", \"forward_bytes\": " << json_number(a.forward_bytes) << ", \"backward_bytes\": " << json_number(a.backward_bytes)
        << ", \"forward_fraction_of_memory\": " << json_number(a.forward_fraction_of_memory)
        << ", \"backward_fraction_of_memory\": " << json_number(a.backward_fraction_of_memory)
        << ", \"fwd_bwd_fraction_of_memory\": " << json_number(a.fwd_bwd_fraction_of_memory)
        << ", \"fused_step_ms\": " << json_number(step_median(r.fused_step))
        << ", \"unfused_step_ms\": " << json_number(step_median(r.unfused_step))
        << ", \"micro_batches\": " << json_number(r.fused_step ? std::optional<double>(r.micro_batches) : std::nullopt);
    out << "}" << (i + 1 < results.size() ? ",\n" : "\n");
  }
  out << "]\n";
  check_written(out, path);
}

void write_svg(const std::string& path, const std::vector<Bar>& bars) {
  check(path.size() > 4 && path.substr(path.size() - 4) == ".svg", "bench: --plot writes SVG; name it *.svg, got ",
        path);
  std::ofstream out(path);
  check(out.good(), "bench: cannot write ", path);
  const int bar = 60, gap = 20, height = 300, left = 50, top = 30;
  double best = 1.5;
  for (const Bar& b : bars) best = std::max(best, b.speedup * 1.1);
  const int width = left + int(bars.size()) * (bar + gap) + gap;
  auto y_of = [&](double v) { return top + height - int(v / best * height); };
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height + top + 60
      << "' font-family='sans-serif' font-size='11'>\n"
      << "<text x='" << left << "' y='18' font-size='13'>fused speedup, forward + backward (unfused ms / fused ms)</text>\n"
      << "<line x1='" << left << "' x2='" << width << "' y1='" << y_of(1) << "' y2='" << y_of(1)
      << "' stroke='#999' stroke-dasharray='4'/>\n<text x='5' y='" << y_of(1) + 4 << "'>1.0x</text>\n";
  for (size_t i = 0; i < bars.size(); ++i) {
    const double s = bars[i].speedup;
    const int x = left + gap + int(i) * (bar + gap);
    out << "<rect x='" << x << "' y='" << y_of(s) << "' width='" << bar << "' height='" << y_of(0) - y_of(s)
        << "' fill='#4a7ebb'/>\n<text x='" << x << "' y='" << y_of(s) - 4 << "'>" << speedup_label(s) << "</text>\n"
        << "<text x='" << x << "' y='" << y_of(0) + 15 << "'>" << bars[i].label << "</text>\n"
        << "<text x='" << x << "' y='" << y_of(0) + 30 << "'>" << bars[i].sublabel << "</text>\n";
  }
  out << "</svg>\n";
  check_written(out, path);
}

}  // namespace fuselab::bench
