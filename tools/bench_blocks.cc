#include "tools/bench_blocks.h"

#include <chrono>
#include <functional>

#include "ops/basic/rmsnorm.h"
#include "ops/op_context.h"
#include "runtime/machine_limits.h"
#include "runtime/runtime.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab::bench {

namespace {

// The machine's copy bandwidth for a run on `device`, with the kernels' thread count; none on CUDA.
std::optional<double> memory_gbps(Device device) {
  if (device.is_cuda()) return std::nullopt;
  return runtime::copy_bandwidth_gbps(num_threads());
}

// norm_block's minimum traffic, in N x H tensors (the weight, rstd and dw are O(N + H)): forward
// reads x and r and writes h and out; backward reads dout and the saved h and writes dh, which is
// the grad of both x and r.
constexpr int64_t kNormBlockForwardTensors = 4, kNormBlockBackwardTensors = 3;

}  // namespace

MlpBlockGemms::MlpBlockGemms(int64_t tokens, int64_t h, DType dtype, Device device) : device(device) {
  Generator gen(2);
  x = randn({tokens, h}, dtype, &gen).to(device);
  w1 = randn({4 * h, h}, dtype, &gen).to(device);
  w2 = randn({h, 4 * h}, dtype, &gen).to(device);
  dy = randn({tokens, h}, dtype, &gen).to(device);
}

double MlpBlockGemms::time() {
  const auto start = std::chrono::steady_clock::now();
  {
    const Tensor hidden = math::matmul(x, false, w1, true);
    const Tensor y = math::matmul(hidden, false, w2, true);
    const Tensor dh = math::matmul(dy, false, w2, false);
    const Tensor dw2 = math::matmul(dy, true, hidden, false);
    const Tensor dx = math::matmul(dh, false, w1, false);
    const Tensor dw1 = math::matmul(dh, true, x, false);
    synchronize(device);
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
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
    synchronize(device);
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
  return {tokens, h, time_stats(f), time_stats(b), time_stats(c), memory_gbps(device)};
}

// mlp_block's GEMM work per forward + backward (six GEMMs of 2 N H 4H flops) over a time, in TFLOP/s.
double gemm_tflops(const Result& r, const TimeStats& time) {
  return 48.0 * double(r.tokens) * double(r.hidden) * double(r.hidden) / (time.median * 1e9);
}

Limits measure_limits(const BenchModel& model, Device device) {
  if (device.is_cuda()) return {};
  const bool gemms = model.name == "mlp_block", rows = model.name == "norm_block";
  return {gemms ? runtime::fma_peak_gflops() : std::nullopt, rows ? memory_gbps(device) : std::nullopt,
          num_threads()};
}

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

}  // namespace fuselab::bench
