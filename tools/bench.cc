// The fused-vs-unfused benchmark tool: builds the same Sequential twice, fused and unfused, and
// times them interleaved (A B A B ...) after a warm-up, forward alone and forward + backward
// (from out.sum()). Reports median, min and max, the speedup and the allocator's peak memory.
//
//   bazel run -c opt //tools:bench -- --model mlp_block --tokens 4096 --hidden 1024 --iters 50
//       [--device cpu] [--dtype float32] [--sweep] [--json FILE] [--plot FILE.svg]
//
// Models:
//   mlp_block   RMSNorm(x + Linear2(GELU(Linear1(x) + b1)) + b2), Linear1 [4H, H], Linear2 [H, 4H],
//               called with x as its extra input
//   norm_block  h = x + r, out = RMSNorm(h), h returned as an extra output
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "autograd/functional.h"
#include "examples/flags.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"

using namespace fuselab;

namespace {

using Ops = std::vector<std::shared_ptr<BasicOp>>;

Ops build(const std::string& model, int64_t h) {
  if (model == "mlp_block") {
    Ops ops = linear_with_bias(h, 4 * h);
    ops.push_back(std::make_shared<GELU>());
    for (auto& op : linear_with_bias(4 * h, h)) ops.push_back(op);
    ops.push_back(std::make_shared<AddExtraInput>());
    ops.push_back(std::make_shared<RMSNorm>(h, 1e-6));
    return ops;
  }
  if (model == "norm_block") {
    return {std::make_shared<AddExtraInput>(), std::make_shared<MakeExtraOutput>(), std::make_shared<RMSNorm>(h, 1e-6)};
  }
  fail("bench: unknown --model ", model, " (mlp_block or norm_block)");
}

struct Stats {
  double median, min, max;
};

Stats stats(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front(), ms.back()};
}

struct Result {
  std::string model, device, dtype;
  int64_t tokens, hidden;
  Stats fused_fwd, unfused_fwd, fused_fwd_bwd, unfused_fwd_bwd;
  size_t fused_peak, unfused_peak;
};

// One configuration of a model, fused or not, with its inputs.
struct Runner {
  Sequential seq;
  Tensor x, extra;
  size_t peak = 0;

  Runner(const std::string& model, int64_t tokens, int64_t h, DType dtype, bool fused) : seq(build(model, h)) {
    seq.to(dtype).set_fusion_enabled(fused);
    Generator gen(1);
    x = randn({tokens, h}, dtype, &gen).set_requires_grad(true);
    extra = model == "mlp_block" ? x : randn({tokens, h}, dtype, &gen).set_requires_grad(true);
  }

  // Milliseconds for one forward (and backward) call.
  double time(bool with_backward) {
    CachingAllocator& cpu = CachingAllocator::of(Device::cpu());
    const size_t before = cpu.stats().bytes_in_use;
    cpu.reset_peak();
    const auto start = std::chrono::steady_clock::now();
    {
      std::optional<NoGradGuard> no_grad;
      if (!with_backward) no_grad.emplace();
      SequentialOutput out = seq(x, {extra});
      if (with_backward) {
        Tensor loss = sum(out.output);
        backward(loss);
      }
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    peak = std::max(peak, cpu.stats().peak_bytes_in_use - before);
    x.zero_grad();
    extra.zero_grad();
    seq.zero_grad();
    return ms;
  }
};

Result measure(const std::string& model, int64_t tokens, int64_t h, DType dtype, int iters) {
  Runner fused(model, tokens, h, dtype, true), unfused(model, tokens, h, dtype, false);
  for (int i = 0; i < 3; ++i) fused.time(true), unfused.time(true);  // warm-up
  std::vector<double> ff, uf, fb, ub;
  for (int i = 0; i < iters; ++i) {  // interleaved, so drift on a shared machine hits both alike
    ff.push_back(fused.time(false));
    uf.push_back(unfused.time(false));
    fb.push_back(fused.time(true));
    ub.push_back(unfused.time(true));
  }
  return {model, "cpu", dtype_name(dtype), tokens, h, stats(ff), stats(uf), stats(fb), stats(ub), fused.peak, unfused.peak};
}

void print_table(const std::vector<Result>& results) {
  std::printf("%-10s %6s %6s | %-24s %-24s | %-26s %-26s | %7s | %9s %9s\n", "model", "tokens", "hidden",
              "fused fwd ms (min-max)", "unfused fwd ms", "fused fwd+bwd ms", "unfused fwd+bwd ms", "speedup",
              "fused MB", "unfused MB");
  for (const Result& r : results) {
    auto cell = [](const Stats& s) {
      char text[64];
      std::snprintf(text, sizeof(text), "%.3f (%.3f-%.3f)", s.median, s.min, s.max);
      return std::string(text);
    };
    std::printf("%-10s %6lld %6lld | %-24s %-24s | %-26s %-26s | %6.2fx | %9.1f %9.1f\n", r.model.c_str(),
                (long long)r.tokens, (long long)r.hidden, cell(r.fused_fwd).c_str(), cell(r.unfused_fwd).c_str(),
                cell(r.fused_fwd_bwd).c_str(), cell(r.unfused_fwd_bwd).c_str(),
                r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median, double(r.fused_peak) / 1e6,
                double(r.unfused_peak) / 1e6);
  }
}

void write_json(const std::string& path, const std::vector<Result>& results) {
  std::ofstream out(path);
  check(out.good(), "bench: cannot write ", path);
  out << "[\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    out << "  {\"model\": \"" << r.model << "\", \"device\": \"" << r.device << "\", \"dtype\": \"" << r.dtype
        << "\", \"tokens\": " << r.tokens << ", \"hidden\": " << r.hidden << ", \"fused_fwd_ms\": " << r.fused_fwd.median
        << ", \"unfused_fwd_ms\": " << r.unfused_fwd.median << ", \"fused_fwd_bwd_ms\": " << r.fused_fwd_bwd.median
        << ", \"unfused_fwd_bwd_ms\": " << r.unfused_fwd_bwd.median
        << ", \"speedup_fwd_bwd\": " << r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median
        << ", \"fused_peak_bytes\": " << r.fused_peak << ", \"unfused_peak_bytes\": " << r.unfused_peak << "}"
        << (i + 1 < results.size() ? ",\n" : "\n");
  }
  out << "]\n";
}

std::string speedup_label(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2fx", s);
  return text;
}

// A bar chart of the forward+backward speedup per configuration, as a self-contained SVG.
void write_svg(const std::string& path, const std::vector<Result>& results) {
  check(path.size() > 4 && path.substr(path.size() - 4) == ".svg", "bench: --plot writes SVG; name it *.svg, got ",
        path);
  std::ofstream out(path);
  check(out.good(), "bench: cannot write ", path);
  const int bar = 60, gap = 20, height = 300, left = 50, top = 30;
  double best = 1.5;
  for (const Result& r : results) best = std::max(best, r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median * 1.1);
  const int width = left + int(results.size()) * (bar + gap) + gap;
  auto y_of = [&](double v) { return top + height - int(v / best * height); };
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height + top + 60
      << "' font-family='sans-serif' font-size='11'>\n"
      << "<text x='" << left << "' y='18' font-size='13'>fused speedup, forward + backward (unfused ms / fused ms)</text>\n"
      << "<line x1='" << left << "' x2='" << width << "' y1='" << y_of(1) << "' y2='" << y_of(1)
      << "' stroke='#999' stroke-dasharray='4'/>\n<text x='5' y='" << y_of(1) + 4 << "'>1.0x</text>\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    const double s = r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median;
    const int x = left + gap + int(i) * (bar + gap);
    out << "<rect x='" << x << "' y='" << y_of(s) << "' width='" << bar << "' height='" << y_of(0) - y_of(s)
        << "' fill='#4a7ebb'/>\n<text x='" << x << "' y='" << y_of(s) - 4 << "'>" << speedup_label(s) << "</text>\n"
        << "<text x='" << x << "' y='" << y_of(0) + 15 << "'>" << r.tokens << "x" << r.hidden << "</text>\n"
        << "<text x='" << x << "' y='" << y_of(0) + 30 << "'>" << r.model << "</text>\n";
  }
  out << "</svg>\n";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    examples::Flags flags(argc, argv);
    const std::string model = flags.get("model", "mlp_block");
    const int64_t tokens = flags.get_int("tokens", 4096), hidden = flags.get_int("hidden", 256);
    const int iters = int(flags.get_int("iters", 20));
    const std::string device = flags.get("device", "cpu"), dtype_text = flags.get("dtype", "float32");
    const bool sweep = flags.get_bool("sweep");
    const std::string json = flags.get("json", ""), plot = flags.get("plot", "");
    flags.check_all_known();
    check(device == "cpu", "bench: --device ", device, " is not supported yet (the CUDA backend is issue 6)");
    check(dtype_text == "float32" || dtype_text == "float64", "bench: --dtype float32 or float64");
    check(tokens > 0 && hidden > 0 && iters > 0, "bench: sizes and iters must be positive");
    const DType dtype = dtype_text == "float32" ? DType::Float32 : DType::Float64;

    std::vector<std::pair<int64_t, int64_t>> shapes{{tokens, hidden}};
    if (sweep) shapes = {{256, 256}, {1024, 256}, {4096, 256}, {1024, 512}, {4096, 1024}};
    std::vector<Result> results;
    for (const auto& [t, h] : shapes) results.push_back(measure(model, t, h, dtype, iters));
    print_table(results);
    if (!json.empty()) write_json(json, results);
    if (!plot.empty()) write_svg(plot, results);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
