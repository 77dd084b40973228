// The fused-vs-unfused benchmark tool: builds the same Sequential twice, fused and unfused, and
// times them interleaved (A B A B ...) after a warm-up, forward alone and forward + backward
// (from out.sum()). Reports median, min and max, the speedup and the allocator's peak memory.
//
//   bazel run -c opt //tools:bench -- --model mlp_block --tokens 4096 --hidden 1024 --iters 50
//       [--device cpu] [--dtype float32|float64|bfloat16] [--sweep] [--json FILE] [--plot FILE.svg]
//   bazel run -c opt //tools:bench -- --model mlp_block --per-fusion [--json FILE] [--plot FILE.svg]
//
// --help lists every flag with its default and its range.
//
// For mlp_block it also times the block's six GEMMs alone (forward: two; backward: two input
// grads and two weight grads), interleaved with the rest: the floor a fused block can approach.
//
// --model rmsnorm times RMSNorm's forward and backward alone (the op's own calls, no tape) beside
// a device-to-device copy of the same tensor, interleaved, and reports GB/s for the bytes each
// must move: forward reads x and writes y, backward reads x and dy and writes dx (the weight, the
// rstd and dw are O(rows + cols)); the copy reads and writes once. That is the GPU RMSNorm
// target: at least 80% of the copy's bandwidth. mlp_block reports TFLOP/s of its GEMM work.
//
// --per-fusion measures each registered fusion that fires on the model alone against fusion
// off, interleaved: forward+backward time and the bytes held between forward and backward (the
// saved activations and the output). Kernel launches are a CUDA figure (GPU performance targets).
//
// Models:
//   mlp_block   RMSNorm(x + Linear2(GELU(Linear1(x) + b1)) + b2), Linear1 [4H, H], Linear2 [H, 4H],
//               called with x as its extra input
//   norm_block  h = x + r, out = RMSNorm(h), h returned as an extra output
//   rmsnorm     RMSNorm alone, for bandwidth (see above)
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autograd/functional.h"
#include "examples/flags.h"
#include "fuser/fusion_check.h"
#include "fuser/sequential.h"
#include "kernels/cuda/device_api.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "ops/op_context.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

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
  fail("bench: unknown --model ", model, " (mlp_block, norm_block or rmsnorm)");
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
  std::optional<Stats> gemms;  // mlp_block's six GEMMs alone
};

// mlp_block's six GEMMs, as its Linear ops call them, with nothing else (N tokens, F = 4H):
//   forward:  h = x W1^T [N, F],  y = h W2^T [N, H]
//   backward: dh = dy W2,  dW2 = dy^T h,  dx = dh W1,  dW1 = dh^T x
struct MlpBlockGemms {
  Tensor x, w1, w2, dy;
  Device device;

  MlpBlockGemms(int64_t tokens, int64_t h, DType dtype, Device device) : device(device) {
    Generator gen(2);
    x = randn({tokens, h}, dtype, &gen).to(device);
    w1 = randn({4 * h, h}, dtype, &gen).to(device);
    w2 = randn({h, 4 * h}, dtype, &gen).to(device);
    dy = randn({tokens, h}, dtype, &gen).to(device);
  }

  double time() {
    const auto start = std::chrono::steady_clock::now();
    {
      const Tensor hidden = math::matmul(x, false, w1, true);
      const Tensor y = math::matmul(hidden, false, w2, true);
      const Tensor dh = math::matmul(dy, false, w2, false);
      const Tensor dw2 = math::matmul(dy, true, hidden, false);
      const Tensor dx = math::matmul(dh, false, w1, false);
      const Tensor dw1 = math::matmul(dh, true, x, false);
      if (device.is_cuda()) kernels::cuda::synchronize(device.index);
    }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
};

// One configuration of a model, fused or not, with its inputs.
struct Runner {
  Sequential seq;
  Tensor x, extra;
  size_t peak = 0;

  Device device;

  Runner(const std::string& model, int64_t tokens, int64_t h, DType dtype, Device device, bool fused,
         const std::string& only_fusion = "")
      : seq(build(model, h)), device(device) {
    seq.to(dtype).to(device).set_fusion_enabled(fused);
    if (!only_fusion.empty()) seq.enable_only_fusions({only_fusion});
    Generator gen(1);
    x = randn({tokens, h}, dtype, &gen).to(device).set_requires_grad(true);
    extra = model == "mlp_block" ? x : randn({tokens, h}, dtype, &gen).to(device).set_requires_grad(true);
  }

  size_t held = 0;  // bytes in use between forward and backward, above the start

  // Milliseconds for one forward (and backward) call.
  double time(bool with_backward) {
    CachingAllocator& memory = CachingAllocator::of(device);
    const size_t before = memory.stats().bytes_in_use;
    memory.reset_peak();
    const auto start = std::chrono::steady_clock::now();
    {
      std::optional<NoGradGuard> no_grad;
      if (!with_backward) no_grad.emplace();
      SequentialOutput out = seq(x, {extra});
      if (with_backward) held = std::max(held, memory.stats().bytes_in_use - before);
      if (with_backward) {
        Tensor loss = sum(out.output);
        backward(loss);
      }
      if (device.is_cuda()) kernels::cuda::synchronize(device.index);  // kernels run asynchronously
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    peak = std::max(peak, memory.stats().peak_bytes_in_use - before);
    x.zero_grad();
    extra.zero_grad();
    seq.zero_grad();
    return ms;
  }
};

Result measure(const std::string& model, int64_t tokens, int64_t h, DType dtype, Device device, int iters) {
  Runner fused(model, tokens, h, dtype, device, true), unfused(model, tokens, h, dtype, device, false);
  std::optional<MlpBlockGemms> gemms;
  if (model == "mlp_block") gemms.emplace(tokens, h, dtype, device);
  for (int i = 0; i < 3; ++i) fused.time(true), unfused.time(true), gemms && gemms->time();  // warm-up
  std::vector<double> ff, uf, fb, ub, g;
  for (int i = 0; i < iters; ++i) {  // interleaved, so drift on a shared machine hits all alike
    ff.push_back(fused.time(false));
    uf.push_back(unfused.time(false));
    fb.push_back(fused.time(true));
    ub.push_back(unfused.time(true));
    if (gemms) g.push_back(gemms->time());
  }
  Result r{model, device.str(), dtype_name(dtype), tokens, h, stats(ff), stats(uf), stats(fb), stats(ub), fused.peak,
           unfused.peak, std::nullopt};
  if (gemms) r.gemms = stats(g);
  return r;
}

// RMSNorm's passes and a copy of the same bytes, as the GPU bandwidth target counts them.
struct Bandwidth {
  int64_t tokens, hidden;
  Stats forward, backward, copy;  // ms
  double bytes(int64_t tensors) const { return double(tensors) * double(tokens * hidden) * sizeof(float); }
  double gbps(const Stats& s, int64_t tensors) const { return bytes(tensors) / (s.median * 1e6); }
};

Bandwidth measure_bandwidth(int64_t tokens, int64_t h, Device device, int iters) {
  RMSNorm norm(h);
  norm.to(device);
  Generator gen(3);
  const Tensor x = randn({tokens, h}, DType::Float32, &gen).to(device);
  const Tensor dy = randn({tokens, h}, DType::Float32, &gen).to(device);
  OpContext ctx;
  ctx.input_requires_grad = true;
  ctx.params_require_grad = {true};
  auto timed = [&](const std::function<void()>& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    if (device.is_cuda()) kernels::cuda::synchronize(device.index);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  auto forward = [&] { norm.op_forward(ctx, x, {}); };
  auto backward = [&] { norm.op_backward(ctx, dy, {}); };
  auto copy = [&] { x.clone(); };
  for (int i = 0; i < 3; ++i) timed(forward), timed(backward), timed(copy);  // warm-up
  std::vector<double> f, b, c;
  for (int i = 0; i < iters; ++i) {
    f.push_back(timed(forward));
    b.push_back(timed(backward));
    c.push_back(timed(copy));
  }
  return {tokens, h, stats(f), stats(b), stats(c)};
}

void print_bandwidth(const Bandwidth& r) {
  const double copy = r.gbps(r.copy, 2), fwd = r.gbps(r.forward, 2), bwd = r.gbps(r.backward, 3);
  std::printf("rmsnorm %lldx%lld float32: forward %.3f ms = %.1f GB/s (%.0f%% of copy), backward %.3f ms = %.1f GB/s "
              "(%.0f%% of copy), copy %.3f ms = %.1f GB/s\n",
              (long long)r.tokens, (long long)r.hidden, r.forward.median, fwd, 100 * fwd / copy, r.backward.median, bwd,
              100 * bwd / copy, r.copy.median, copy);
}

// Output goes through the stream's buffer; a full disk shows only when it is flushed.
void check_written(std::ofstream& out, const std::string& path) {
  out.flush();
  check(out.good(), "bench: writing ", path, " failed: ", std::strerror(errno));
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
      << ", \"backward_fraction_of_copy\": " << r.gbps(r.backward, 3) / copy << "}\n]\n";
  check_written(out, path);
}

struct FusionReport {
  std::string fusion;
  Stats fused_fwd_bwd, unfused_fwd_bwd;
  size_t fused_held, unfused_held;
};

// Each registered fusion that fires on the model, alone, against fusion off.
std::vector<FusionReport> measure_per_fusion(const std::string& model, int64_t tokens, int64_t h, DType dtype,
                                             Device device, int iters) {
  std::vector<FusionReport> reports;
  for (const std::string& name : registered_fusion_names()) {
    Runner only(model, tokens, h, dtype, device, true, name), off(model, tokens, h, dtype, device, false);
    bool fires = false;
    for (const auto* list : {&only.seq.fused_lists()->forward.ops, &only.seq.fused_lists()->backward.ops}) {
      for (const auto& op : *list) fires |= op->is_fused();
    }
    if (!fires) continue;
    for (int i = 0; i < 3; ++i) only.time(true), off.time(true);
    std::vector<double> a, b;
    for (int i = 0; i < iters; ++i) {
      a.push_back(only.time(true));
      b.push_back(off.time(true));
    }
    reports.push_back({name, stats(a), stats(b), only.held, off.held});
  }
  return reports;
}

void print_fusion_reports(const std::string& model, int64_t tokens, int64_t h, const std::vector<FusionReport>& reports) {
  std::printf("%s %lldx%lld, each fusion alone against fusion off (forward + backward):\n", model.c_str(),
              (long long)tokens, (long long)h);
  std::printf("%-30s %12s %12s %8s %14s %14s\n", "fusion", "alone ms", "off ms", "speedup", "held MB alone",
              "held MB off");
  for (const FusionReport& r : reports) {
    std::printf("%-30s %12.3f %12.3f %7.2fx %14.2f %14.2f\n", r.fusion.c_str(), r.fused_fwd_bwd.median,
                r.unfused_fwd_bwd.median, r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median, double(r.fused_held) / 1e6,
                double(r.unfused_held) / 1e6);
  }
}

void write_fusion_json(const std::string& path, const std::string& model, int64_t tokens, int64_t h,
                       const std::vector<FusionReport>& reports) {
  std::ofstream out(path);
  check(out.good(), "bench: cannot write ", path);
  out << "[\n";
  for (size_t i = 0; i < reports.size(); ++i) {
    const FusionReport& r = reports[i];
    out << "  {\"fusion\": \"" << r.fusion << "\", \"model\": \"" << model << "\", \"tokens\": " << tokens
        << ", \"hidden\": " << h << ", \"fused_fwd_bwd_ms\": " << r.fused_fwd_bwd.median
        << ", \"unfused_fwd_bwd_ms\": " << r.unfused_fwd_bwd.median
        << ", \"speedup_fwd_bwd\": " << r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median
        << ", \"fused_saved_bytes\": " << r.fused_held << ", \"unfused_saved_bytes\": " << r.unfused_held
        << ", \"kernel_launches\": null}" << (i + 1 < reports.size() ? ",\n" : "\n");
  }
  out << "]\n";
  check_written(out, path);
}

// mlp_block's GEMM work per forward + backward (six GEMMs of 2 N H 4H flops) over a time, in TFLOP/s.
double gemm_tflops(const Result& r, const Stats& time) {
  return 48.0 * double(r.tokens) * double(r.hidden) * double(r.hidden) / (time.median * 1e9);
}

void print_table(const std::vector<Result>& results) {
  std::printf("%-10s %6s %6s | %-24s %-24s | %-26s %-26s | %7s | %-26s %12s | %9s %9s\n", "model", "tokens",
              "hidden", "fused fwd ms (min-max)", "unfused fwd ms", "fused fwd+bwd ms", "unfused fwd+bwd ms", "speedup",
              "six GEMMs alone ms", "fused/GEMMs", "fused MB", "unfused MB");
  for (const Result& r : results) {
    auto cell = [](const Stats& s) {
      char text[64];
      std::snprintf(text, sizeof(text), "%.3f (%.3f-%.3f)", s.median, s.min, s.max);
      return std::string(text);
    };
    const std::string gemms = r.gemms ? cell(*r.gemms) : "-";
    char ratio[16] = "-";
    if (r.gemms) std::snprintf(ratio, sizeof(ratio), "%.2fx", r.fused_fwd_bwd.median / r.gemms->median);
    std::printf("%-10s %6lld %6lld | %-24s %-24s | %-26s %-26s | %6.2fx | %-26s %12s | %9.1f %9.1f\n",
                r.model.c_str(), (long long)r.tokens, (long long)r.hidden, cell(r.fused_fwd).c_str(),
                cell(r.unfused_fwd).c_str(), cell(r.fused_fwd_bwd).c_str(), cell(r.unfused_fwd_bwd).c_str(),
                r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median, gemms.c_str(), ratio, double(r.fused_peak) / 1e6,
                double(r.unfused_peak) / 1e6);
  }
  for (const Result& r : results) {
    if (r.gemms) {
      std::printf("%s %lldx%lld: fused fwd+bwd runs its GEMM work at %.3f TFLOP/s (the GEMMs alone: %.3f)\n",
                  r.model.c_str(), (long long)r.tokens, (long long)r.hidden, gemm_tflops(r, r.fused_fwd_bwd),
                  gemm_tflops(r, *r.gemms));
    }
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
        << ", \"fused_peak_bytes\": " << r.fused_peak << ", \"unfused_peak_bytes\": " << r.unfused_peak
        << ", \"gemms_fwd_bwd_ms\": ";
    if (r.gemms) out << r.gemms->median;
    else out << "null";
    out << ", \"fused_fwd_bwd_tflops\": ";
    if (r.gemms) out << gemm_tflops(r, r.fused_fwd_bwd);
    else out << "null";
    out << "}"
        << (i + 1 < results.size() ? ",\n" : "\n");
  }
  out << "]\n";
  check_written(out, path);
}

std::string speedup_label(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2fx", s);
  return text;
}

struct Bar {
  double speedup;
  std::string label, sublabel;
};

// A bar chart of forward+backward speedups, as a self-contained SVG.
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

}  // namespace

int main(int argc, char** argv) {
  try {
    examples::Flags flags("bench", "Times a model fused against unfused, interleaved, and reports the speedup.");
    std::string model = "mlp_block", device_text = "cpu", dtype_text = "float32", json, plot;
    int64_t tokens = 4096, hidden = 256, iters_flag = 20;
    bool sweep = false, per_fusion = false;
    flags.add("model", model, "mlp_block, norm_block or rmsnorm");
    flags.add("tokens", tokens, "rows of the input", {1, 1 << 20});
    flags.add("hidden", hidden, "width of the input", {1, 1 << 16});
    flags.add("iters", iters_flag, "timed iterations of each variant", {1, 1'000'000});
    flags.add("device", device_text, "cpu or cuda");
    flags.add("dtype", dtype_text, "float32, float64 or bfloat16");
    flags.add("sweep", sweep, "time a grid of sizes instead of one");
    flags.add("per-fusion", per_fusion, "time each fusion that fires on the model alone");
    flags.add("json", json, "file for the report, as JSON");
    flags.add("plot", plot, "file for a bar chart of the speedups, as SVG");
    if (!flags.parse(argc, argv)) return 0;
    const int iters = int(iters_flag);
    check(device_text == "cpu" || device_text == "cuda", "bench: --device cpu or cuda, got ", device_text);
    check(device_text == "cpu" || kernels::cuda::device_count() > 0, "bench: --device cuda, but this machine has no CUDA device");
    const Device device = device_text == "cpu" ? Device::cpu() : Device::cuda(0);
    check(dtype_text == "float32" || dtype_text == "float64" || dtype_text == "bfloat16",
          "bench: --dtype float32, float64 or bfloat16, got ", dtype_text);
    const DType dtype = dtype_text == "float32"   ? DType::Float32
                        : dtype_text == "float64" ? DType::Float64
                                                  : DType::BFloat16;

    if (per_fusion) {
      const auto reports = measure_per_fusion(model, tokens, hidden, dtype, device, iters);
      print_fusion_reports(model, tokens, hidden, reports);
      if (!json.empty()) write_fusion_json(json, model, tokens, hidden, reports);
      std::vector<Bar> bars;
      for (const FusionReport& r : reports) {
        bars.push_back({r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median, r.fusion.substr(0, 12), r.fusion.substr(12, 16)});
      }
      if (!plot.empty()) write_svg(plot, bars);
      return 0;
    }
    if (model == "rmsnorm") {
      check(dtype == DType::Float32 && !sweep && plot.empty(), "bench: --model rmsnorm is float32, one shape, no plot");
      const Bandwidth r = measure_bandwidth(tokens, hidden, device, iters);
      print_bandwidth(r);
      if (!json.empty()) write_bandwidth_json(json, r, device.str());
      return 0;
    }
    std::vector<std::pair<int64_t, int64_t>> shapes{{tokens, hidden}};
    if (sweep) shapes = {{256, 256}, {1024, 256}, {4096, 256}, {1024, 512}, {4096, 1024}};
    std::vector<Result> results;
    for (const auto& [t, h] : shapes) results.push_back(measure(model, t, h, dtype, device, iters));
    print_table(results);
    if (!json.empty()) write_json(json, results);
    std::vector<Bar> bars;
    for (const Result& r : results) {
      bars.push_back({r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median,
                      std::to_string(r.tokens) + "x" + std::to_string(r.hidden), r.model});
    }
    if (!plot.empty()) write_svg(plot, bars);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
