#include "fuser/fusion_report.h"

#include <algorithm>
#include <chrono>

#include "autograd/tape.h"
#include "fuser/registry.h"
#include "kernels/cuda/device_api.h"
#include "tensor/allocator.h"
#include "tensor/launch.h"

namespace fuselab {

TimeStats time_stats(std::vector<double> ms) {
  check(!ms.empty(), "time_stats: no timings");
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front(), ms.back()};
}

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

namespace {

// One variant of the Sequential (one fusion alone, or none) and what its calls measured.
struct Variant {
  Sequential seq;
  size_t held = 0;
  uint64_t launches = 0;  // of the last call

  Variant(const Sequential& whole, const FusionSwitches& switches) : seq(whole.slice(0, int64_t(whole.size()))) {
    seq.set_fusion_switches(switches);
  }

  // Milliseconds for one forward + loss + backward, the grads cleared afterwards (outside the time).
  double call(const Tensor& input, const std::vector<Tensor>& extra_inputs, const LossOf& loss) {
    const Device device = input.device();
    CachingAllocator& memory = CachingAllocator::of(device);
    const size_t before = memory.stats().bytes_in_use;
    const uint64_t launches_before = launch_count();
    const auto start = std::chrono::steady_clock::now();
    {
      const SequentialOutput out = seq(input, extra_inputs);
      const size_t in_use = memory.stats().bytes_in_use;  // forward may free what was there before it
      held = std::max(held, in_use > before ? in_use - before : 0);
      const Tensor l = loss(out);
      check(l.defined() && l.numel() == 1, "report_fusions: the loss must be a scalar, got ",
            l.defined() ? l.shape() : Shape{}, " from ", seq.describe());
      backward(l);
      if (device.is_cuda()) kernels::cuda::synchronize(device.index);  // CUDA kernels run asynchronously
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    launches = launch_count() - launches_before;
    seq.zero_grad();
    return ms;
  }
};

void clear_input_grads(Tensor input, std::vector<Tensor> extra_inputs) {
  input.zero_grad();
  for (Tensor& t : extra_inputs) t.zero_grad();
}

FusionMeasurement measure_alone(const std::string& name, Sequential& seq, const Tensor& input,
                                const std::vector<Tensor>& extra_inputs, const LossOf& loss,
                                const FusionReportOptions& options) {
  Variant alone(seq, FusionSwitches::only({name})), off(seq, FusionSwitches(false));
  auto run = [&](Variant& v) {
    const double ms = v.call(input, extra_inputs, loss);
    clear_input_grads(input, extra_inputs);
    return ms;
  };
  for (int i = 0; i < options.warmup; ++i) run(alone), run(off);
  std::vector<double> a, b;
  for (int i = 0; i < options.iters; ++i) {
    a.push_back(run(alone));
    b.push_back(run(off));
  }
  return {name, fused_entries(alone.seq), time_stats(a), time_stats(b), alone.held, off.held, alone.launches,
          off.launches};
}

}  // namespace

FusionReport report_fusions(Sequential& seq, const Tensor& input, const std::vector<Tensor>& extra_inputs,
                            const LossOf& loss, const FusionReportOptions& options) {
  check(options.warmup >= 0 && options.iters >= 1, "report_fusions: warmup ", options.warmup, " and iters ",
        options.iters, " must be >= 0 and >= 1");
  check(bool(loss), "report_fusions: no loss function for ", seq.describe());
  FusionReport report;
  report.all_fusions = seq.describe();
  const std::vector<std::string> all_entries = fused_entries(seq);
  auto fires = [&](const std::string& name) {
    return std::any_of(all_entries.begin(), all_entries.end(),
                       [&](const std::string& e) { return e.rfind(name + "(", 0) == 0; });
  };
  for (const std::string& name : registered_fusion_names()) {
    if (fires(name)) report.fusions.push_back(measure_alone(name, seq, input, extra_inputs, loss, options));
  }
  return report;
}

}  // namespace fuselab
