#include "tools/bench_blocks.h"

#include <chrono>
#include <functional>

#include "autograd/grad_mode.h"
#include "ops/basic/rmsnorm.h"
#include "ops/basic/router.h"
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

double BlockGemms::time() {
  const auto start = std::chrono::steady_clock::now();
  run();
  synchronize(device);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

namespace {

BlockGemms mlp_block_gemms(int64_t tokens, int64_t h, DType dtype, Device device) {
  Generator gen(2);
  const Tensor x = randn({tokens, h}, dtype, &gen).to(device), w1 = randn({4 * h, h}, dtype, &gen).to(device),
               w2 = randn({h, 4 * h}, dtype, &gen).to(device), dy = randn({tokens, h}, dtype, &gen).to(device);
  auto run = [=] {
    const Tensor hidden = math::matmul(x, false, w1, true);
    const Tensor y = math::matmul(hidden, false, w2, true);
    const Tensor dh = math::matmul(dy, false, w2, false);
    const Tensor dw2 = math::matmul(dy, true, hidden, false);
    const Tensor dx = math::matmul(dh, false, w1, false);
    const Tensor dw1 = math::matmul(dh, true, x, false);
  };
  return {run, 2.0 * 6 * double(tokens) * double(h) * double(4 * h), device};
}

// The rows each expert takes: the router's choice for every row of `input`, counted.
std::vector<int64_t> expert_rows(Router& router, const Tensor& input) {
  NoGradGuard no_grad;
  OpContext ctx;
  const Tensor indices = router.op_forward(ctx, input, {}).extra_outputs.at(1);
  std::vector<int64_t> rows(size_t(router.experts()), 0);
  for (int64_t e : indices.to(Device::cpu()).to_vector<int64_t>()) ++rows[size_t(e)];
  return rows;
}

// The experts' GEMMs as the unfused moe_block's two GroupedLinears call them, for R routed rows of
// width `in` = `out`: forward u = x W1^T [R, 2h], y = a W2^T [R, out]; backward da = dy W2, dW2 =
// dy^T a, dx = du W1, dW1 = du^T x.
BlockGemms moe_block_gemms(const ModelSizes& s, DType dtype, Device device, Sequential& seq, const Tensor& input) {
  auto router = std::dynamic_pointer_cast<Router>(seq.ops().at(0));
  check(router != nullptr, "bench: moe_block's first op is not its Router");
  const std::vector<int64_t> sizes = expert_rows(*router, input);
  const int64_t experts = router->experts(), rows = input.size(0) * router->top_k();
  const int64_t in = s.hidden, out = s.hidden, h = s.extra.at("expert-hidden");
  Generator gen(2);
  auto random = [&](const Shape& shape) { return randn(shape, dtype, &gen).to(device); };
  const Tensor x = random({rows, in}), w1 = random({experts, 2 * h, in}), a = random({rows, h}),
               w2 = random({experts, out, h}), dy = random({rows, out}), du = random({rows, 2 * h});
  auto run = [=] {
    auto product = [&](const Tensor& a, const Tensor& w, bool weight_grad, bool transpose_w, const Shape& shape) {
      math::grouped_matmul_into(empty(shape, dtype, device), a, w, weight_grad, transpose_w, sizes);
    };
    product(x, w1, false, true, {rows, 2 * h});       // u
    product(a, w2, false, true, {rows, out});         // y
    product(dy, w2, false, false, {rows, h});         // da
    product(dy, a, true, false, {experts, out, h});   // dW2
    product(du, w1, false, false, {rows, in});        // dx
    product(du, x, true, false, {experts, 2 * h, in});  // dW1
  };
  return {run, 2.0 * 3 * double(rows) * double(2 * h * in + out * h), device};
}

}  // namespace

bool has_block_gemms(const std::string& model) { return model == "mlp_block" || model == "moe_block"; }

std::optional<BlockGemms> block_gemms(const std::string& model, const ModelSizes& sizes, DType dtype, Device device,
                                      Sequential& seq, const Tensor& input) {
  if (model == "mlp_block") return mlp_block_gemms(sizes.tokens, sizes.hidden, dtype, device);
  if (model == "moe_block") return moe_block_gemms(sizes, dtype, device, seq, input);
  return std::nullopt;
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

double gemm_tflops(const Result& r, const TimeStats& time) { return r.gemm_flops / (time.median * 1e9); }

Limits measure_limits(const BenchModel& model, Device device) {
  if (device.is_cuda()) return {};
  const bool gemms = has_block_gemms(model.name), rows = model.name == "norm_block";
  return {gemms ? runtime::fma_peak_gflops() : std::nullopt, rows ? memory_gbps(device) : std::nullopt,
          num_threads()};
}

AgainstLimits against_limits(const Result& r, const Limits& limits) {
  AgainstLimits a;
  if (r.gemms && limits.fma_peak_gflops && r.dtype == "float32") {
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
