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
// For mlp_block and moe_block it also times the block's GEMMs alone (forward: two; backward: two
// input grads and two weight grads; moe_block's grouped over its experts, as its router spreads the
// batch), interleaved with the rest: the floor a fused block can approach.
//
// --model rmsnorm times RMSNorm's forward and backward alone (the op's own calls, no tape) beside
// a device-to-device copy of the same tensor, interleaved, and reports GB/s for the bytes each
// must move: forward reads x and writes y, backward reads x and dy and writes dx (the weight, the
// rstd and dw are O(rows + cols)); the copy reads and writes once. That is the GPU RMSNorm
// target: at least 80% of the copy's bandwidth. mlp_block and moe_block report TFLOP/s of their
// GEMM work.
//
// Each run is also put against the machine's limits, measured in the same process (CPU only;
// tools/machine_limits.h): mlp_block's and moe_block's GEMM work as a share of the FMA peak times
// the threads and the share of their time spent outside the GEMMs (float32); norm_block's and
// rmsnorm's minimum bytes as a share of the copy bandwidth.
//
// --per-fusion measures each registered fusion that fires on the model (with every fusion on)
// alone against fusion off, interleaved, with report_fusions (fuser/fusion_report.h): forward+backward
// time, the bytes held between forward and backward (the saved activations and the output) and the
// kernel launches of one forward + backward.
//
// The work is split by concept: bench_timing.h times a model fused against unfused, bench_blocks.h
// holds the blocks' GEMM and bandwidth figures and the machine's limits, bench_output.h prints and
// writes the results; this file reads the flags and dispatches.
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
//   gpt, llama     examples/gpt.cc's model with GPT-2's block or the llama preset's (ending in its
//                  loss) on --tokens windows of random ids; --gpt-context, --layers, --gpt-heads
//   llama_block    one block of the llama preset on x [--tokens, --gpt-context, H] requiring grad;
//                  loss: mean squared error against a random target
//   attention      the attention chain on random qkv; --batch, --heads, --kv-heads, --rope, --causal
//   lm_head        a language model's head and loss, Linear [--vocab, H] then CrossEntropy against
//                  random next tokens (its extra input), x [--tokens, H] requiring grad; fused, the
//                  LMHeadCrossEntropy never holds the logits (defaults: 8192 tokens, vocab 8192)
// The examples' models take the example's defaults (charlm's hidden 256, classify's 64, ...);
// their inputs require no grad, as in training, so the first layer computes no input grad.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "examples/flags.h"
#include "fuser/fusion_report.h"
#include "runtime/runtime.h"
#include "tools/bench_blocks.h"
#include "tools/bench_models.h"
#include "tools/bench_output.h"
#include "tools/bench_timing.h"

using namespace fuselab;
using namespace fuselab::bench;

namespace {

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
      // A std::map's entries stay put, so the binding holds; models that share a size (gpt,
      // llama and llama_block) declare it once.
      if (values.emplace(f.name, f.default_value).second) flags.add(f.name, values[f.name], f.help, f.range);
    }
  }
}

// The models whose size --name is ("gpt or llama").
std::string owners_of_size(const std::string& name) {
  std::string owners;
  for (const BenchModel& m : bench::bench_models()) {
    for (const bench::SizeFlag& f : m.size_flags) {
      if (f.name == name) owners += (owners.empty() ? "" : " or ") + m.name;
    }
  }
  return owners;
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
          owners_of_size(flag), ", not of --model ", name);
  }
  return sizes;
}

Device parse_device(const std::string& text) {
  check(text == "cpu" || text == "cuda", "bench: --device cpu or cuda, got ", text);
  check(text == "cpu" || cuda_device_count() > 0, "bench: --device cuda, but this machine has no CUDA device");
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

// The model with every fusion on, its batch and its loss, through report_fusions (fuser/fusion_report.h).
void run_per_fusion(const Run& run) {
  Generator model_gen(0), batch_gen(1);  // the seeds of the fused-against-unfused timing
  Sequential seq = run.model->build(run.sizes, model_gen);
  seq.to(run.dtype).to(run.device);
  const examples::Batch batch = run.model->batch(run.sizes, run.dtype, run.device, batch_gen);
  const FusionReport result = report_fusions(seq, batch.input, batch.extra_inputs, batch.loss, {3, run.iters});
  print_fusion_reports(run.model->name, run.sizes, result);
  if (!run.json.empty()) {
    write_fusion_json(run.json, run.model->name, run.sizes, run.device.str(), dtype_name(run.dtype), result);
  }
  if (run.plot.empty()) return;
  std::vector<Bar> bars;
  for (const FusionMeasurement& r : result.fusions) {  // a name's first 12 characters, then up to 16 more
    const std::string& name = r.fusion;
    bars.push_back({r.speedup(), name.substr(0, 12), name.size() > 12 ? name.substr(12, 16) : ""});
  }
  write_svg(run.plot, bars);
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
  use_passive_waits(argc, argv);
  try {
    examples::Flags flags("bench", "Times a model fused against unfused, interleaved, and reports the speedup.");
    std::string model = "mlp_block", device_text = "cpu", dtype_text = "float32", json, plot;
    int64_t tokens = 4096, hidden = 256, iters_flag = 20, micro_batches = 1;
    std::map<std::string, int64_t> size_values;
    bool sweep = false, per_fusion = false, step = false;
    flags.add("model", model, "one of " + model_names());
    flags.add("tokens", tokens, "rows of the batch (charlm: contexts, each predicting one character; gpt, llama, llama_block: windows)", {1, 1 << 20});
    flags.show("tokens", "4096; mnist_mlp's 128, lm_head's 8192, the gpt models' 32 windows", "[1, 1048576]");
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
    const Run run{spec, model_sizes(flags, spec, tokens, hidden, size_values), examples::floating_dtype_flag("dtype", dtype_text),
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
    if (run.device.is_cpu()) std::printf("%s\n", cpu_gemm_description().c_str());
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
