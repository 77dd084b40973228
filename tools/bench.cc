// The fused-vs-unfused benchmark tool: builds the same Sequential twice, fused and unfused, and
// times them interleaved (A B A B ...) after a warm-up, forward alone and forward + backward
// (from the model's loss), and with --step a whole training step. Reports median, min and max, the
// speedup and the allocator's peak memory.
//
//   bazel run -c opt //tools:bench -- --model mlp_block --tokens 4096 --hidden 1024 --iters 50
//       [--device cpu] [--dtype float32|float64|bfloat16] [--sweep] [--json FILE] [--plot FILE.svg]
//   bazel run -c opt //tools:bench -- --model charlm --per-fusion [--blocks 2] [--json FILE] [--plot FILE.svg]
//
// --help lists every flag with its default and its range, and the model names.
//
// --step also times a training step as a training loop runs it, fused and unfused, interleaved with
// the rest: zero_grad, forward, loss, backward and an SGD step (lr 0.01, no momentum), e.g.
//   bazel-bin/tools/bench --model mnist_mlp --step --iters 30     (FUSELAB_NUM_THREADS=1 for 1 thread)
// With --micro-batches N the step runs forward, loss and backward N times on the batch before the
// SGD step, the grads accumulating (from the second on, the weight grads add into them in place).
// bench/peers/pytorch_bench.py --model mnist_mlp times the same step in PyTorch.
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
// Each run is also put against the machine's limits, measured in the same process (CPU only;
// tools/machine_limits.h): mlp_block's GEMM work as a share of the FMA peak times the threads and
// the share of its time spent outside the GEMMs; norm_block's and rmsnorm's minimum bytes as a
// share of the copy bandwidth.
//
// --per-fusion measures each registered fusion that fires on the model (with every fusion on)
// alone against fusion off, interleaved: forward+backward time and the bytes held between forward and backward (the
// saved activations and the output). Kernel launches are a CUDA figure (GPU performance targets).
//
// Models (tools/bench_models.h; --tokens is the batch's rows, --hidden the model's width):
//   mlp_block      RMSNorm(x + Linear2(GELU(Linear1(x) + b1)) + b2), Linear1 [4H, H], Linear2 [H, 4H],
//                  called with x as its extra input; loss: mean squared error against a random target
//   norm_block     h = x + r, out = RMSNorm(h), h returned as an extra output; loss: the same
//   rmsnorm        RMSNorm alone, for bandwidth (see above)
//   charlm         examples/charlm.cc's language model on random character ids, cross entropy
//                  against random next ids; --context, --embed, --blocks
//   classify       examples/classify.cc's MLP on random features, cross entropy against random
//                  labels; --features, --classes
//   mnist_mlp      classify at MNIST's size: 784 features, --hidden 1024, 10 classes, --tokens 128
//   custom_fusion  examples/custom_fusion.cc's Linear, Square, ConstantScale with its user fusions
//                  registered; loss: mean squared error against a random target
// The examples' models take the example's defaults (charlm's hidden 256, classify's 64, ...);
// their inputs require no grad, as in training, so the first layer computes no input grad.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autograd/functional.h"
#include "examples/flags.h"
#include "fuser/fusion_check.h"
#include "fuser/sequential.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/threading.h"
#include "kernels/cuda/device_api.h"
#include "ops/basic/rmsnorm.h"
#include "ops/op_context.h"
#include "optim/sgd.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"
#include "tools/bench_models.h"
#include "tools/machine_limits.h"

using namespace fuselab;
using bench::BenchModel;
using bench::ModelSizes;

namespace {

struct Stats {
  double median, min, max;
};

Stats stats(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front(), ms.back()};
}

struct Result {
  std::string model, device, dtype;
  size_t element_bytes;
  int64_t tokens, hidden;
  std::map<std::string, int64_t> sizes;  // the model's own size flags
  Stats fused_fwd, unfused_fwd, fused_fwd_bwd, unfused_fwd_bwd;
  size_t fused_peak, unfused_peak;
  std::optional<Stats> gemms;                     // mlp_block's six GEMMs alone
  std::optional<Stats> fused_step, unfused_step;  // with --step
  int micro_batches = 0;                          // per step, with --step
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

// What one timed call runs: the forward alone (no grad), forward and backward, or a training step.
enum class Pass { Forward, ForwardBackward, Step };

// One configuration of a model, fused or not, with a random batch of its inputs and an optimizer
// for its training step.
struct Runner {
  std::string model;
  Sequential seq;
  examples::Batch batch;
  std::optional<SGD> sgd;
  int micro_batches = 1;  // forward + backward calls per training step
  size_t peak = 0;
  size_t held = 0;  // bytes in use between forward and backward, above the start
  bool grads_checked = false;

  Device device;

  Runner(const BenchModel& spec, const ModelSizes& sizes, DType dtype, Device device, bool fused,
         const std::string& only_fusion = "")
      : model(spec.name), seq(build(spec, sizes)), device(device) {
    seq.to(dtype).to(device).set_fusion_switches(!fused ? FusionSwitches(false)
                                                 : only_fusion.empty() ? FusionSwitches()
                                                                       : FusionSwitches::only({only_fusion}));
    Generator gen(1);
    batch = spec.batch(sizes, dtype, device, gen);
    sgd.emplace(seq.parameters(), SGDOptions{0.01});  // after to(): it holds the converted parameters
  }

  static Sequential build(const BenchModel& spec, const ModelSizes& sizes) {
    Generator gen(0);
    return spec.build(sizes, gen);
  }

  // Milliseconds for one call of `pass`. A step clears the grads itself, as a training loop does;
  // the other passes leave them cleared after the timing.
  double time(Pass pass) {
    const bool with_backward = pass != Pass::Forward;
    CachingAllocator& memory = CachingAllocator::of(device);
    const size_t before = memory.stats().bytes_in_use;
    memory.reset_peak();
    const auto start = std::chrono::steady_clock::now();
    {
      if (pass == Pass::Step) sgd->zero_grad();
      std::optional<NoGradGuard> no_grad;
      if (!with_backward) no_grad.emplace();
      for (int i = 0; i < (pass == Pass::Step ? micro_batches : 1); ++i) {
        SequentialOutput out = seq(batch.input, batch.extra_inputs);
        if (with_backward) held = std::max(held, memory.stats().bytes_in_use - before);
        if (with_backward) backward(batch.loss(out));
      }
      if (pass == Pass::Step) sgd->step();
      if (device.is_cuda()) kernels::cuda::synchronize(device.index);  // kernels run asynchronously
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    peak = std::max(peak, memory.stats().peak_bytes_in_use - before);
    if (with_backward && !grads_checked) check_every_parameter_has_a_grad();
    for (Tensor* t : inputs()) t->zero_grad();
    seq.zero_grad();
    return ms;
  }

  // A timed backward that skipped part of the model would flatter it: the loss must reach every
  // parameter (checked once, outside the timing).
  void check_every_parameter_has_a_grad() {
    for (const auto& [name, param] : seq.named_parameters()) {
      check(param.grad().defined(), "bench: --model ", model, ": the loss's backward gives ", name, " no grad");
    }
    grads_checked = true;
  }

  std::vector<Tensor*> inputs() {
    std::vector<Tensor*> all{&batch.input};
    for (Tensor& t : batch.extra_inputs) all.push_back(&t);
    return all;
  }
};

// `step`: the training step's micro-batches, or 0 to leave the step out.
Result measure(const BenchModel& model, const ModelSizes& sizes, DType dtype, Device device, int iters, int step) {
  Runner fused(model, sizes, dtype, device, true), unfused(model, sizes, dtype, device, false);
  fused.micro_batches = unfused.micro_batches = step;
  std::optional<MlpBlockGemms> gemms;
  if (model.name == "mlp_block") gemms.emplace(sizes.tokens, sizes.hidden, dtype, device);
  for (int i = 0; i < 3; ++i) {  // warm-up
    fused.time(Pass::ForwardBackward), unfused.time(Pass::ForwardBackward), gemms && gemms->time();
    if (step) fused.time(Pass::Step), unfused.time(Pass::Step);
  }
  std::vector<double> ff, uf, fb, ub, g, fs, us;
  for (int i = 0; i < iters; ++i) {  // interleaved, so drift on a shared machine hits all alike
    ff.push_back(fused.time(Pass::Forward));
    uf.push_back(unfused.time(Pass::Forward));
    fb.push_back(fused.time(Pass::ForwardBackward));
    ub.push_back(unfused.time(Pass::ForwardBackward));
    if (gemms) g.push_back(gemms->time());
    if (step) fs.push_back(fused.time(Pass::Step)), us.push_back(unfused.time(Pass::Step));
  }
  Result r{model.name,   device.str(), dtype_name(dtype), dtype_size(dtype), sizes.tokens, sizes.hidden,
           sizes.extra,  stats(ff),    stats(uf),         stats(fb),         stats(ub),    fused.peak,
           unfused.peak, std::nullopt, std::nullopt,      std::nullopt};
  if (gemms) r.gemms = stats(g);
  if (step) r.fused_step = stats(fs), r.unfused_step = stats(us), r.micro_batches = step;
  return r;
}

// RMSNorm's passes and a copy of the same bytes, as the GPU bandwidth target counts them.
struct Bandwidth {
  int64_t tokens, hidden;
  Stats forward, backward, copy;  // ms
  std::optional<double> memory_gbps;  // the machine's copy bandwidth (CPU only)
  double bytes(int64_t tensors) const { return double(tensors) * double(tokens * hidden) * sizeof(float); }
  double gbps(const Stats& s, int64_t tensors) const { return bytes(tensors) / (s.median * 1e6); }
};

// The machine's copy bandwidth for a run on `device`, with the kernels' thread count; none on CUDA.
std::optional<double> memory_gbps(Device device) {
  if (device.is_cuda()) return std::nullopt;
  return bench::copy_bandwidth_gbps(kernels::cpu::num_threads());
}

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
  return {tokens, h, stats(f), stats(b), stats(c), memory_gbps(device)};
}

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

struct FusionReport {
  std::string fusion;
  std::vector<std::string> entries;  // the fused ops it made alone, e.g. "ForwardLinearBiasAdd(linear1, bias1, addextrainput0)"
  Stats fused_fwd_bwd, unfused_fwd_bwd;
  size_t fused_held, unfused_held;
};

struct PerFusion {
  std::string all_fusions;  // describe() with every fusion on
  std::vector<FusionReport> reports;
};

// The fused ops of a Sequential's two lists, each once (a joint op is in both).
std::vector<std::string> fused_entries(Sequential& seq) {
  const auto lists = seq.fused_lists();
  std::vector<const FusibleOp*> seen;
  std::vector<std::string> entries;
  for (const auto* list : {&lists->forward.ops, &lists->backward.ops}) {
    for (const auto& op : *list) {
      if (!op->is_fused() || std::find(seen.begin(), seen.end(), op.get()) != seen.end()) continue;
      seen.push_back(op.get());
      entries.push_back(op->describe());
    }
  }
  return entries;
}

// Each registered fusion that fires on the model with every fusion on, alone, against fusion off.
// (A fusion that fires only alone, where another takes its ops first, would be measured for a
// model nobody runs.)
PerFusion measure_per_fusion(const BenchModel& model, const ModelSizes& sizes, DType dtype, Device device, int iters) {
  PerFusion result;
  Runner all(model, sizes, dtype, device, true);
  result.all_fusions = all.seq.describe();
  const std::vector<std::string> all_entries = fused_entries(all.seq);
  auto fires_with_all_on = [&](const std::string& name) {
    return std::any_of(all_entries.begin(), all_entries.end(),
                       [&](const std::string& e) { return e.rfind(name + "(", 0) == 0; });
  };
  for (const std::string& name : registered_fusion_names()) {
    if (!fires_with_all_on(name)) continue;
    Runner only(model, sizes, dtype, device, true, name), off(model, sizes, dtype, device, false);
    std::vector<std::string> entries = fused_entries(only.seq);
    for (int i = 0; i < 3; ++i) only.time(Pass::ForwardBackward), off.time(Pass::ForwardBackward);
    std::vector<double> a, b;
    for (int i = 0; i < iters; ++i) {
      a.push_back(only.time(Pass::ForwardBackward));
      b.push_back(off.time(Pass::ForwardBackward));
    }
    result.reports.push_back({name, std::move(entries), stats(a), stats(b), only.held, off.held});
  }
  return result;
}

void print_fusion_reports(const std::string& model, const ModelSizes& sizes, const PerFusion& result) {
  std::printf("%s %lldx%lld%s with every fusion on:\n%s\n", model.c_str(), (long long)sizes.tokens,
              (long long)sizes.hidden, sizes_text(sizes.extra).c_str(), result.all_fusions.c_str());
  std::printf("each fusion alone against fusion off (forward + backward):\n");
  std::printf("%-30s %8s %12s %12s %8s %14s %14s\n", "fusion", "fused at", "alone ms", "off ms", "speedup",
              "held MB alone", "held MB off");
  for (const FusionReport& r : result.reports) {
    std::printf("%-30s %8zu %12.3f %12.3f %7.2fx %14.2f %14.2f\n", r.fusion.c_str(), r.entries.size(),
                r.fused_fwd_bwd.median, r.unfused_fwd_bwd.median, r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median,
                double(r.fused_held) / 1e6, double(r.unfused_held) / 1e6);
  }
}

void write_fusion_json(const std::string& path, const std::string& model, const ModelSizes& sizes,
                       const std::string& device, const std::string& dtype, const PerFusion& result) {
  std::ofstream out(path);
  check(out.good(), "bench: cannot write ", path);
  out << "[\n";
  for (size_t i = 0; i < result.reports.size(); ++i) {
    const FusionReport& r = result.reports[i];
    std::string entries;
    for (const std::string& e : r.entries) entries += (entries.empty() ? "" : ", ") + json_string(e);
    out << "  {\"fusion\": \"" << r.fusion << "\", \"model\": \"" << model << "\", \"device\": \"" << device
        << "\", \"dtype\": \"" << dtype << "\", \"tokens\": " << sizes.tokens << ", \"hidden\": " << sizes.hidden
        << ", \"sizes\": " << sizes_json(sizes.extra) << ", \"fused_entries\": [" << entries << "]"
        << ", \"fused_fwd_bwd_ms\": " << r.fused_fwd_bwd.median
        << ", \"unfused_fwd_bwd_ms\": " << r.unfused_fwd_bwd.median
        << ", \"speedup_fwd_bwd\": " << r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median
        << ", \"fused_saved_bytes\": " << r.fused_held << ", \"unfused_saved_bytes\": " << r.unfused_held
        << ", \"kernel_launches\": null}" << (i + 1 < result.reports.size() ? ",\n" : "\n");
  }
  out << "]\n";
  check_written(out, path);
}

// mlp_block's GEMM work per forward + backward (six GEMMs of 2 N H 4H flops) over a time, in TFLOP/s.
double gemm_tflops(const Result& r, const Stats& time) {
  return 48.0 * double(r.tokens) * double(r.hidden) * double(r.hidden) / (time.median * 1e9);
}

// The limits the table's runs are put against, measured once per run on the CPU (none on CUDA):
// the FMA peak for mlp_block, the copy bandwidth for norm_block.
struct Limits {
  std::optional<double> fma_peak_gflops;  // one core's
  std::optional<double> memory_gbps, threads;
};

Limits measure_limits(const BenchModel& model, Device device) {
  if (device.is_cuda()) return {};
  const bool gemms = model.name == "mlp_block", rows = model.name == "norm_block";
  return {gemms ? bench::fma_peak_gflops() : std::nullopt, rows ? memory_gbps(device) : std::nullopt,
          kernels::cpu::num_threads()};
}

// norm_block's minimum traffic, in N x H tensors (the weight, rstd and dw are O(N + H)): forward
// reads x and r and writes h and out; backward reads dout and the saved h and writes dh, which is
// the grad of both x and r.
constexpr int64_t kNormBlockForwardTensors = 4, kNormBlockBackwardTensors = 3;

// One run against the limits; each share is empty where it does not apply.
struct AgainstLimits {
  // mlp_block: GEMM FLOP/s over (peak x threads), fused and for the GEMMs alone, and the share of
  // the fused forward + backward outside the GEMMs (1 - GEMMs alone / fused).
  std::optional<double> fraction_of_peak, gemms_fraction_of_peak, outside_gemms_fraction;
  // norm_block: minimum bytes per pass and their rate over the copy bandwidth, for forward, backward
  // and the two together. The backward's time is forward + backward less forward, so it includes
  // the loss (the mean squared error: two passes over the output) and its grad (one pass).
  std::optional<double> forward_bytes, backward_bytes, forward_fraction_of_memory, backward_fraction_of_memory,
      fwd_bwd_fraction_of_memory;
};

AgainstLimits against_limits(const Result& r, const Limits& limits) {
  AgainstLimits a;
  if (r.gemms && limits.fma_peak_gflops) {
    const double peak_tflops = *limits.fma_peak_gflops * *limits.threads / 1e3;
    a.fraction_of_peak = gemm_tflops(r, r.fused_fwd_bwd) / peak_tflops;
    a.gemms_fraction_of_peak = gemm_tflops(r, *r.gemms) / peak_tflops;
    a.outside_gemms_fraction = 1 - r.gemms->median / r.fused_fwd_bwd.median;
  }
  if (r.model == "norm_block" && limits.memory_gbps) {
    const double tensor = double(r.tokens * r.hidden) * double(r.element_bytes);
    a.forward_bytes = kNormBlockForwardTensors * tensor, a.backward_bytes = kNormBlockBackwardTensors * tensor;
    const double backward_ms = r.fused_fwd_bwd.median - r.fused_fwd.median;
    auto share = [&](double bytes, double ms) { return bytes / (ms * 1e6) / *limits.memory_gbps; };
    a.forward_fraction_of_memory = share(*a.forward_bytes, r.fused_fwd.median);
    a.fwd_bwd_fraction_of_memory = share(*a.forward_bytes + *a.backward_bytes, r.fused_fwd_bwd.median);
    if (backward_ms > 0) {  // timing noise can leave fwd+bwd at or below fwd
      a.backward_fraction_of_memory = share(*a.backward_bytes, backward_ms);
    }
  }
  return a;
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

void print_table(const std::vector<Result>& results, const Limits& limits) {
  std::printf("%-13s %6s %6s | %-24s %-24s | %-26s %-26s | %7s | %-26s %12s | %9s %9s\n", "model", "tokens",
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

std::optional<double> step_median(const std::optional<Stats>& step) {
  if (!step) return std::nullopt;
  return step->median;
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

// --model's names: the table's models, and rmsnorm (the bandwidth timing).
std::string model_names() {
  std::string names;
  for (const BenchModel& m : bench::bench_models()) names += m.name + ", ";
  return names + "rmsnorm";
}

// Declares every model's own size flags (--blocks, ...), each bound to its entry of `values`.
void add_size_flags(examples::Flags& flags, std::map<std::string, int64_t>& values) {
  for (const BenchModel& m : bench::bench_models()) {
    for (const bench::SizeFlag& f : m.size_flags) {
      values[f.name] = f.default_value;  // a std::map's entries stay put, so the binding holds
      flags.add(f.name, values[f.name], f.help, f.range);
    }
  }
}

// The model whose size --name is.
std::string owner_of_size(const std::string& name) {
  for (const BenchModel& m : bench::bench_models()) {
    for (const bench::SizeFlag& f : m.size_flags) {
      if (f.name == name) return m.name;
    }
  }
  return "?";
}

// The sizes a run of `model` (null: rmsnorm) reads. A size flag of another model is an error
// rather than a flag silently ignored.
ModelSizes model_sizes(const examples::Flags& flags, const BenchModel* model, int64_t tokens, int64_t hidden,
                       const std::map<std::string, int64_t>& values) {
  const std::string name = model ? model->name : "rmsnorm";
  ModelSizes sizes{flags.given("tokens") || !model ? tokens : model->default_tokens,
                   flags.given("hidden") || !model ? hidden : model->default_hidden,
                   {}};
  if (model) {
    for (const bench::SizeFlag& f : model->size_flags) sizes.extra[f.name] = values.at(f.name);
  }
  for (const auto& [flag, value] : values) {
    check(!flags.given(flag) || sizes.extra.count(flag), "bench: --", flag, " is a size of --model ",
          owner_of_size(flag), ", not of --model ", name);
  }
  return sizes;
}

DType parse_dtype(const std::string& text) {
  check(text == "float32" || text == "float64" || text == "bfloat16", "bench: --dtype float32, float64 or bfloat16, got ",
        text);
  return text == "float32" ? DType::Float32 : text == "float64" ? DType::Float64 : DType::BFloat16;
}

Device parse_device(const std::string& text) {
  check(text == "cpu" || text == "cuda", "bench: --device cpu or cuda, got ", text);
  check(text == "cpu" || kernels::cuda::device_count() > 0, "bench: --device cuda, but this machine has no CUDA device");
  return text == "cpu" ? Device::cpu() : Device::cuda(0);
}

// What the command line asked for, once read and checked.
struct Run {
  const BenchModel* model;  // null for rmsnorm
  ModelSizes sizes;
  DType dtype;
  Device device;
  int iters;
  int step;  // micro-batches per training step, or 0 without --step
  bool sweep;
  std::string json, plot;
};

void run_per_fusion(const Run& run) {
  const PerFusion result = measure_per_fusion(*run.model, run.sizes, run.dtype, run.device, run.iters);
  print_fusion_reports(run.model->name, run.sizes, result);
  if (!run.json.empty()) {
    write_fusion_json(run.json, run.model->name, run.sizes, run.device.str(), dtype_name(run.dtype), result);
  }
  std::vector<Bar> bars;
  for (const FusionReport& r : result.reports) {
    bars.push_back({r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median, r.fusion.substr(0, 12), r.fusion.substr(12, 16)});
  }
  if (!run.plot.empty()) write_svg(run.plot, bars);
}

void run_bandwidth(const Run& run) {
  check(run.dtype == DType::Float32 && !run.sweep && run.plot.empty(), "bench: --model rmsnorm is float32, one shape, no plot");
  const Bandwidth r = measure_bandwidth(run.sizes.tokens, run.sizes.hidden, run.device, run.iters);
  print_bandwidth(r);
  if (!run.json.empty()) write_bandwidth_json(run.json, r, run.device.str());
}

void run_fused_against_unfused(const Run& run) {
  std::vector<std::pair<int64_t, int64_t>> shapes{{run.sizes.tokens, run.sizes.hidden}};
  if (run.sweep) shapes = {{256, 256}, {1024, 256}, {4096, 256}, {1024, 512}, {4096, 1024}};
  const Limits limits = measure_limits(*run.model, run.device);
  std::vector<Result> results;
  for (const auto& [t, h] : shapes) {
    ModelSizes sizes = run.sizes;
    sizes.tokens = t, sizes.hidden = h;
    results.push_back(measure(*run.model, sizes, run.dtype, run.device, run.iters, run.step));
  }
  print_table(results, limits);
  if (!run.json.empty()) write_json(run.json, results, limits);
  std::vector<Bar> bars;
  for (const Result& r : results) {
    bars.push_back({r.unfused_fwd_bwd.median / r.fused_fwd_bwd.median,
                    std::to_string(r.tokens) + "x" + std::to_string(r.hidden), r.model});
  }
  if (!run.plot.empty()) write_svg(run.plot, bars);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    examples::Flags flags("bench", "Times a model fused against unfused, interleaved, and reports the speedup.");
    std::string model = "mlp_block", device_text = "cpu", dtype_text = "float32", json, plot;
    int64_t tokens = 4096, hidden = 256, iters_flag = 20, micro_batches = 1;
    std::map<std::string, int64_t> size_values;
    bool sweep = false, per_fusion = false, step = false;
    flags.add("model", model, "one of " + model_names());
    flags.add("tokens", tokens, "rows of the batch (charlm: contexts, each predicting one character)", {1, 1 << 20});
    flags.show("tokens", "4096; mnist_mlp's 128", "[1, 1048576]");
    flags.add("hidden", hidden, "width of the model (mlp_block's H, charlm's MLP, custom_fusion's Linear)", {1, 1 << 16});
    flags.show("hidden", "the model's own", "[1, 65536]");  // 256 for the bench's blocks, the example's for its model
    add_size_flags(flags, size_values);
    flags.add("iters", iters_flag, "timed iterations of each variant", {1, 1'000'000});
    flags.add("device", device_text, "cpu or cuda");
    flags.add("dtype", dtype_text, "float32, float64 or bfloat16");
    flags.add("sweep", sweep, "time a grid of sizes instead of one");
    flags.add("per-fusion", per_fusion, "time each fusion that fires on the model alone");
    flags.add("step", step, "also time a training step: zero_grad, forward, loss, backward, SGD (lr 0.01)");
    flags.add("micro-batches", micro_batches, "--step: forward + backward calls per step, grads accumulating",
              {1, 1024});
    flags.add("json", json, "file for the report, as JSON");
    flags.add("plot", plot, "file for a bar chart of the speedups, as SVG");
    if (!flags.parse(argc, argv)) return 0;

    const BenchModel* spec = bench::find_bench_model(model);
    check(spec || model == "rmsnorm", "bench: unknown --model ", model, "; known: ", model_names());
    const Run run{spec, model_sizes(flags, spec, tokens, hidden, size_values), parse_dtype(dtype_text),
                  parse_device(device_text), int(iters_flag), step ? int(micro_batches) : 0, sweep, json, plot};
    check(step || !flags.given("micro-batches"), "bench: --micro-batches is the training step's; add --step");
    if (!spec) {
      check(!per_fusion && !step,
            "bench: --model rmsnorm times the op alone; --per-fusion and --step time a "
            "Sequential model");
      run_bandwidth(run);
      return 0;
    }
    if (spec->register_fusions) spec->register_fusions();
    if (run.device.is_cpu()) std::printf("%s\n", kernels::cpu::cpu_gemm_description().c_str());
    if (per_fusion) {
      check(!sweep, "bench: --per-fusion times one shape; leave out --sweep");
      check(!step, "bench: --per-fusion times forward + backward; leave out --step");
      run_per_fusion(run);
    } else {
      run_fused_against_unfused(run);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
