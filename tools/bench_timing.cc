#include "tools/bench_timing.h"

#include <algorithm>
#include <chrono>

#include "autograd/grad_mode.h"
#include "autograd/tape.h"
#include "optim/sgd.h"
#include "runtime/runtime.h"
#include "tensor/allocator.h"
#include "tools/bench_blocks.h"

namespace fuselab::bench {

namespace {

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
        const size_t in_use = memory.stats().bytes_in_use;  // forward may free what was there before it
        if (with_backward) held = std::max(held, in_use > before ? in_use - before : 0);
        if (with_backward) backward(batch.loss(out));
      }
      if (pass == Pass::Step) sgd->step();
      synchronize(device);  // kernels run asynchronously
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

}  // namespace

// `step`: the training step's micro-batches, or 0 to leave the step out.
Result measure(const BenchModel& model, const ModelSizes& sizes, DType dtype, Device device, int iters, int step) {
  Runner fused(model, sizes, dtype, device, true), unfused(model, sizes, dtype, device, false);
  fused.micro_batches = unfused.micro_batches = step;
  std::optional<BlockGemms> gemms = block_gemms(model.name, sizes, dtype, device, fused.seq, fused.batch.input);
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
           sizes.extra,  time_stats(ff),    time_stats(uf),         time_stats(fb),         time_stats(ub),    fused.peak,
           unfused.peak};
  if (gemms) r.gemms = time_stats(g), r.gemm_flops = gemms->flops;
  if (step) r.fused_step = time_stats(fs), r.unfused_step = time_stats(us), r.micro_batches = step;
  return r;
}

}  // namespace fuselab::bench
