// The CUDA backend against the CPU path beyond single ops, which the op-case table checks on every
// device (op_cases.cc): the fused ops and their cuBLASLt and cuDNN calls and fallbacks, a fused
// Sequential, training, the optimizers, the allocator, TF32, bfloat16 through a whole model, and
// the errors. Forward and backward on random inputs in float32 (1e-5 relative to the float64
// result; see expect_gpu_matches_cpu) and float64, on sizes that are not multiples of the block
// size, with every GPU allocation poisoned (NaN) so unwritten elements are caught.
// Every test reports SKIPPED with the reason where there is no GPU (or no CUDA in the build).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "kernels/cuda/device_api.h"
#include "kernels/cuda/gemm.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/bias.h"
#include "ops/basic/channel_bias.h"
#include "ops/basic/conv2d.h"
#include "ops/basic/embedding.h"
#include "ops/basic/layernorm.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/moe_mlp.h"
#include "ops/basic/rmsnorm.h"
#include "optim/adamw.h"
#include "optim/clip.h"
#include "optim/sgd.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/tensor_math.h"
#include "tests/expect_error.h"

namespace fuselab {
namespace {

const Device kGpu = Device::cuda(0);

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kernels::cuda::compiled_with_cuda()) GTEST_SKIP() << "built without CUDA (--config=cpu)";
    if (kernels::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount found none";
  }
};

// |gpu - cpu| <= tol * (1 + |cpu|) elementwise, and the same shape and dtype.
void expect_close(const Tensor& gpu, const Tensor& cpu, double tol, const std::string& what) {
  ASSERT_TRUE(gpu.defined() && cpu.defined()) << what;
  ASSERT_EQ(gpu.device(), kGpu) << what;
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  const Tensor g = gpu.to(Device::cpu()).to(DType::Float64), c = cpu.to(DType::Float64);
  const auto gv = g.to_vector<double>(), cv = c.to_vector<double>();
  for (size_t i = 0; i < gv.size(); ++i) {
    ASSERT_LE(std::abs(gv[i] - cv[i]), tol * (1 + std::abs(cv[i]))) << what << " at element " << i;
  }
}

using TensorFunction = std::function<Tensor(const std::vector<Tensor>&)>;

// f's output on copies of `inputs` moved to `device` and cast to `dtype` (all requiring grad),
// then the grad of each input for the loss sum(f(inputs) * w): w is random, so each output
// element gets its own upstream grad. GPU memory is poisoned (NaN) while f runs.
std::vector<Tensor> output_and_grads(const std::vector<Tensor>& inputs, const TensorFunction& f, Device device,
                                     DType dtype) {
  std::vector<Tensor> leaves;
  for (const Tensor& x : inputs) leaves.push_back(x.to(dtype).to(device).detach().set_requires_grad());
  CachingAllocator::of(kGpu).set_poison(device.is_cuda());
  const Tensor y = f(leaves);
  Generator gen(7);
  const Tensor w = randn(y.shape(), inputs[0].dtype(), &gen).to(y.dtype()).to(device);
  backward(sum(mul(y, w)));
  CachingAllocator::of(kGpu).set_poison(false);
  std::vector<Tensor> results{y};
  for (const Tensor& leaf : leaves) results.push_back(leaf.grad());
  return results;
}

// max_i |a_i - exact_i| / (1 + |exact_i|), for a on the CPU
double relative_error(const Tensor& a, const Tensor& exact) {
  const auto av = a.to(DType::Float64).to_vector<double>(), ev = exact.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < av.size(); ++i) worst = std::max(worst, std::abs(av[i] - ev[i]) / (1 + std::abs(ev[i])));
  return worst;
}

// Runs f on the GPU and on the CPU and compares the output and every input's grad.
// - float64 (and any dtype given a `tol`, such as bfloat16): GPU against CPU, to 1e-12 or `tol`.
// - float32: GPU against the CPU in float64 on the same inputs, to 1e-5 relative, or to twice
//   the CPU's own float32 error where that is larger. Two float32 summation orders over 70000
//   rows differ in the fifth digit, so float32 against float32 would fail the more accurate one.
void expect_gpu_matches_cpu(const std::vector<Tensor>& inputs, const TensorFunction& f, const std::string& what,
                            double tol = 0) {
  const DType dtype = inputs[0].dtype();
  const std::vector<Tensor> gpu = output_and_grads(inputs, f, kGpu, dtype);
  const std::vector<Tensor> cpu = output_and_grads(inputs, f, Device::cpu(), dtype);
  const bool against_float64 = dtype == DType::Float32 && tol == 0;
  const std::vector<Tensor> exact = against_float64 ? output_and_grads(inputs, f, Device::cpu(), DType::Float64) : cpu;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const std::string label = what + (i == 0 ? " output" : " grad of input " + std::to_string(i - 1));
    if (against_float64) {
      expect_close(gpu[i], exact[i], std::max(1e-5, 2 * relative_error(cpu[i], exact[i])), label);
    } else {
      expect_close(gpu[i], cpu[i], tol == 0 ? 1e-12 : tol, label);
    }
  }
}

std::string describe(const Shape& shape) {
  std::ostringstream os;
  os << shape;
  return os.str();
}

Tensor random(const Shape& shape, DType dtype, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, dtype, &gen);
}

TEST_F(Cuda, RoundTripKeepsValues) {
  const Tensor host = randn({1000});
  const Tensor device = host.to(kGpu);
  EXPECT_EQ(device.device(), kGpu);
  EXPECT_EQ(device.to(Device::cpu()).to_vector<float>(), host.to_vector<float>());
}

// y = gelu(x W1 + b1) W2 + b2, loss = mean((y - t)^2): 30 SGD steps on the GPU follow the CPU.
// Fills run on the device: zero as a memset, -0.0 and other values in a kernel, every dtype.
TEST_F(Cuda, FillsEveryDtypeOnTheDevice) {
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16, DType::Int64}) {
    for (double value : {0.0, -0.0, 3.0}) {
      const Tensor t = full({1000}, value, dtype, kGpu);
      if (dtype == DType::Int64) {
        EXPECT_EQ(t.to_vector<int64_t>(), std::vector<int64_t>(1000, int64_t(value)));
        continue;
      }
      for (double v : t.to(DType::Float64).to_vector<double>()) {
        ASSERT_EQ(v, value) << dtype_name(dtype);
        ASSERT_EQ(std::signbit(v), std::signbit(value)) << dtype_name(dtype);
      }
    }
  }
}

TEST_F(Cuda, TrainingFollowsTheCpuLosses) {
  auto train = [](Device device) {
    std::vector<Tensor> params = {random({16, 64}, DType::Float32, 1), zeros({64}), random({64, 4}, DType::Float32, 2),
                                  zeros({4})};
    for (Tensor& p : params) p = math::scaled(p, 0.2).to(device).set_requires_grad();
    Tensor x = random({128, 16}, DType::Float32, 3);
    const Tensor t = matmul(x, math::scaled(random({16, 4}, DType::Float32, 4), 0.5)).to(device);  // learnable
    x = x.to(device);
    std::vector<double> losses;
    for (int step = 0; step < 30; ++step) {
      const Tensor h = gelu(add(matmul(x, params[0]), params[1]));
      const Tensor d = sub(add(matmul(h, params[2]), params[3]), t);
      const Tensor loss = mean(mul(d, d));
      for (Tensor& p : params) p.zero_grad();
      backward(loss);
      for (Tensor& p : params) math::add_(p, p.grad(), -0.1);
      losses.push_back(loss.item());
    }
    return losses;
  };
  const std::vector<double> cpu = train(Device::cpu()), gpu = train(kGpu);
  EXPECT_LT(cpu.back(), 0.9 * cpu.front());  // it learns
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_NEAR(gpu[i], cpu[i], 1e-4 * cpu[i]) << "step " << i;
}

// A fused op whose cuBLASLt epilogue is refused says so in explain(), exactly when cuBLASLt
// refuses it (always on the emulator, which emulates no cuBLASLt); an epilogue cuBLASLt never
// had (GELU in float64) runs in its own pass by design and is not reported.
TEST_F(Cuda, RefusedCublasLtEpiloguesShowInExplain) {
  auto explain_after_a_call = [](DType dtype) {
    Sequential seq({std::make_shared<Linear>(8, 16), std::make_shared<Bias>(16), std::make_shared<GELU>()});
    seq.to(kGpu).to(dtype);
    Tensor x = random({4, 8}, dtype, 5).to(kGpu);
    x.set_requires_grad(true);  // so the GELU's pre-activation is kept: the BiasGELUAux epilogue
    backward(sum(seq(x)));
    return seq.explain();
  };
  // Whether cuBLASLt offers BiasGELUAux for float here, asked directly on a tiny GEMM.
  const Tensor a = ones({4, 8}, DType::Float32).to(kGpu), w = ones({16, 8}, DType::Float32).to(kGpu);
  const Tensor b = zeros({16}).to(kGpu);
  Tensor y = zeros({4, 16}).to(kGpu), pre = zeros({4, 16}).to(kGpu);
  const bool offered = kernels::cuda::gemm_with_epilogue<float>(
      false, true, 4, 16, 8, a.cuda_data<float>(), 8, w.cuda_data<float>(), 8, 0, nullptr, y.cuda_data<float>(), 16,
      kernels::cuda::GemmEpilogue::BiasGELUAux, b.cuda_data<float>(), pre.cuda_data<float>(), 0);
  const std::string float32 = explain_after_a_call(DType::Float32);
  EXPECT_EQ(float32.find("device fallbacks") != std::string::npos, !offered) << float32;
  if (!offered) {
    EXPECT_NE(float32.find("ForwardLinearBiasActivation(linear0, bias0, gelu0): cuBLASLt has no algorithm"),
              std::string::npos)
        << float32;
  }
  const std::string float64 = explain_after_a_call(DType::Float64);
  EXPECT_EQ(float64.find("device fallbacks"), std::string::npos) << float64;
}

// 30 parameters (more than one launch's 24) and one of 3.3M elements (more than one launch's
// 192 chunks of 16384): AdamW, SGD with momentum and Nesterov, and the grad-norm clip.
TEST_F(Cuda, OptimizersAndClipMatchCpu) {
  std::vector<Shape> shapes(30, Shape{7, 13});
  shapes.push_back({3300001});
  auto run = [&](Device device, const std::string& which) {
    std::vector<Tensor> params;
    for (size_t i = 0; i < shapes.size(); ++i) {
      params.push_back(random(shapes[i], DType::Float32, 10 + i).to(device).set_requires_grad());
    }
    AdamW adamw(params, {1e-2, 0.9, 0.99, 1e-8, 0.1});
    SGD sgd(params, {1e-2, 0.9, 1e-3, /*nesterov=*/true});
    std::vector<double> norms;
    for (int step = 0; step < 3; ++step) {
      for (size_t i = 0; i < params.size(); ++i) {
        params[i].set_grad(math::scaled(random(shapes[i], DType::Float32, 100 * step + i), 0.01).to(device));
      }
      norms.push_back(clip_grad_norm(params, 1.0));
      if (which == "adamw") adamw.step();
      else sgd.step();
    }
    params.push_back(from_vector<double>(norms, {3}).to(device));
    return params;
  };
  for (const std::string which : {"adamw", "sgd"}) {
    const std::vector<Tensor> cpu = run(Device::cpu(), which), gpu = run(kGpu, which);
    for (size_t i = 0; i < cpu.size(); ++i) expect_close(gpu[i], cpu[i], 1e-5, which + " tensor " + std::to_string(i));
  }
}

// An optimizer made on the CPU keeps training a model moved to the GPU after some steps: the
// parameters move in place and its buffers follow them, so the run matches one that stayed on the CPU.
TEST_F(Cuda, OptimizerFollowsAModelMovedToTheGpu) {
  auto run = [](bool move) {
    Generator gen(5);
    Sequential model({std::make_shared<Linear>(6, 16, &gen), std::make_shared<Bias>(16, 0.5, &gen),
                      std::make_shared<GELU>(), std::make_shared<Linear>(16, 2, &gen)});
    AdamW opt(model.parameters(), {1e-2});
    const Tensor x = random({32, 6}, DType::Float32, 6), t = random({32, 2}, DType::Float32, 7);
    std::vector<double> losses;
    for (int step = 0; step < 8; ++step) {
      if (move && step == 4) model.to(kGpu);
      const Device device = model.parameters()[0].device();
      opt.zero_grad();
      const Tensor loss = mse(model(x.to(device)), t.to(device));
      backward(loss);
      opt.step();
      losses.push_back(loss.item());
    }
    for (const Tensor& p : opt.params()) EXPECT_EQ(p.device(), move ? kGpu : Device::cpu());
    for (const auto& [name, value] : opt.state()) EXPECT_EQ(value.device(), Device::cpu()) << name;
    return losses;
  };
  const std::vector<double> cpu = run(false), moved = run(true);
  EXPECT_LT(cpu.back(), cpu.front());
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_NEAR(moved[i], cpu[i], 1e-5 * (1 + cpu[i])) << "step " << i;
}

TEST_F(Cuda, AllocatorReusesBlocksAcrossSteps) {
  CachingAllocator& allocator = CachingAllocator::of(kGpu);
  const Tensor x = random({256, 128}, DType::Float32, 1).to(kGpu);
  Tensor w = random({128, 128}, DType::Float32, 2).to(kGpu).set_requires_grad();
  auto step = [&] {
    w.zero_grad();
    backward(sum(gelu(matmul(x, w))));
    math::add_(w, w.grad(), -1e-4);
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up fills the cache
  const AllocatorStats before = allocator.stats();
  for (int i = 0; i < 1000; ++i) step();
  const AllocatorStats after = allocator.stats();
  EXPECT_EQ(after.system_allocations, before.system_allocations);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_GT(after.peak_bytes_in_use, 0u);
}

// MakeExtraOutput, Linear+Bias+GELU, Linear+Bias, residual add (AddExtraInput), RMSNorm, whose
// extra output also feeds the loss. On the GPU the fused ops run their CUDA kernels
// (ForwardLinearBiasActivation, ForwardLinearBiasAdd, BackwardActivationBias, BackwardLinearAdd):
// the output and every grad match the same Sequential on the CPU, and the GPU run with fusion off.
TEST_F(Cuda, FusedSequentialMatchesCpuAndUnfused) {
  auto make = [] {
    Generator gen(3);
    Sequential model;
    model.append(std::make_shared<MakeExtraOutput>());
    model.append(linear_with_bias(48, 192, &gen)).append(std::make_shared<GELU>());
    model.append(linear_with_bias(192, 48, &gen)).append(std::make_shared<AddExtraInput>());
    model.append(std::make_shared<RMSNorm>(48));
    return model;
  };
  Sequential cpu_model = make(), gpu_model = make(), gpu_unfused = make();
  gpu_model.to(kGpu);
  gpu_unfused.to(kGpu).set_fusion_switches(false);
  const Tensor x = random({100, 48}, DType::Float32, 4);
  auto run = [&](Sequential& model, Device device) {
    Tensor input = x.to(device).detach().set_requires_grad();
    CachingAllocator::of(kGpu).set_poison(device.is_cuda());
    const SequentialOutput out = model(input, {input});  // the residual is the input
    const Tensor y = add(out.output, scale(out.extra_outputs.at(0), 0.5));
    Generator gen(5);
    backward(sum(mul(y, randn(y.shape(), y.dtype(), &gen).to(device))));
    CachingAllocator::of(kGpu).set_poison(false);
    std::vector<Tensor> results{y, input.grad()};
    for (const Tensor& p : model.parameters()) results.push_back(p.grad());
    return results;
  };
  const std::vector<Tensor> cpu = run(cpu_model, Device::cpu()), gpu = run(gpu_model, kGpu),
                            unfused = run(gpu_unfused, kGpu);
  for (const char* fused : {"ForwardLinearBiasActivation", "ForwardLinearBiasAdd", "BackwardActivationBias",
                            "BackwardLinearAdd"}) {
    EXPECT_NE(gpu_model.describe().find(fused), std::string::npos) << gpu_model.describe();
  }
  ASSERT_EQ(cpu.size(), 2 + cpu_model.parameters().size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    expect_close(gpu[i], cpu[i], 1e-5, "fused on the GPU against the CPU, tensor " + std::to_string(i));
    expect_close(gpu[i], unfused[i].to(Device::cpu()), 1e-5,
                 "fused against unfused on the GPU, tensor " + std::to_string(i));
  }
}

// Each forward fusion of Linear + Bias on the GPU, where cuBLASLt applies the epilogue (bias,
// bias + ReLU, bias + GELU with its aux output, the residual as C) and where it falls back to a
// GEMM plus one pass (SiLU, float64 GELU, an output width that is not a multiple of 8 for GELU's
// aux), against the CPU: outputs and every grad.
TEST_F(Cuda, LinearEpiloguesMatchCpu) {
  const std::pair<std::string, std::function<std::shared_ptr<BasicOp>()>> tails[] = {
      {"ReLU", [] { return std::make_shared<ReLU>(); }},
      {"GELU", [] { return std::make_shared<GELU>(); }},
      {"SiLU", [] { return std::make_shared<SiLU>(); }},
      {"bias only", nullptr},
      {"residual", [] { return std::make_shared<AddExtraInput>(); }}};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (int64_t out : {64, 37}) {
      for (const auto& [name, tail] : tails) {
        const Tensor x = random({33, 24}, dtype, 1);
        const Tensor w = math::scaled(random({out, 24}, dtype, 2), 0.3);
        const Tensor b = random({out}, dtype, 3);
        const bool with_residual = name == "residual";
        std::vector<Tensor> inputs{x, w, b};
        if (with_residual) inputs.push_back(random({33, out}, dtype, 4));
        expect_gpu_matches_cpu(
            inputs,
            [&](const auto& in) {
              auto linear = std::make_shared<Linear>(24, out);
              auto bias = std::make_shared<Bias>(out);
              linear->parameter(0) = in[1];  // weight and bias under test: leaves whose grads are compared
              bias->parameter(0) = in[2];
              Sequential model({linear, bias});
              if (tail) model.append(tail());
              EXPECT_NE(model.describe().find("ForwardLinearBias"), std::string::npos) << model.describe();
              return with_residual ? model(in[0], {in[3]}).output : model(in[0]);
            },
            "Linear+Bias+" + name + " " + dtype_name(dtype) + " out " + std::to_string(out));
      }
    }
  }
}

// MakeExtraOutput + RMSNorm or LayerNorm whose extra output also feeds the loss: the fused
// BackwardAddNorm adds the residual's grad inside the norm's backward kernel, on the norm
// kernels' edge sizes (the norms alone are in the op-case table).
std::string norm_name(bool layer_norm) { return layer_norm ? "LayerNorm" : "RMSNorm"; }

TEST_F(Cuda, BackwardAddNormMatchesCpu) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (const Shape& shape : {Shape{1, 1}, Shape{7, 1000}, Shape{300, 4099}, Shape{70000, 3}}) {
      const Tensor x = random(shape, dtype, 1);
      const Tensor w = add(math::scaled(random({shape[1]}, dtype, 2), 0.1), full({shape[1]}, 1.0, dtype));
      for (bool layer_norm : {false, true}) {
        expect_gpu_matches_cpu(
            {x, w},
            [&](const auto& in) {
              Sequential model({std::make_shared<MakeExtraOutput>()});
              std::shared_ptr<NormOp> norm;
              if (layer_norm) {
                norm = std::make_shared<LayerNorm>(shape[1]);
              } else {
                norm = std::make_shared<RMSNorm>(shape[1]);
              }
              norm->parameter(0) = in[1];  // the weight under test: a leaf whose grad is compared
              model.append(norm).to(in[0].dtype()).to(in[0].device());  // LayerNorm's bias
              const SequentialOutput out = model(in[0], {});
              EXPECT_NE(model.describe().find("BackwardAddNorm"), std::string::npos) << model.describe();
              return add(out.output, scale(out.extra_outputs.at(0), 0.5));
            },
            norm_name(layer_norm) + " " + describe(shape) + " with the residual's grad");
      }
    }
  }
}

// Conv2d + ChannelBias (+ activation) through cuDNN, fused (ForwardConvBiasActivation: with ReLU
// cuDNN's fused convolution-bias-activation call) and unfused, against the CPU's im2col + GEMM.
TEST_F(Cuda, Conv2dBiasActivationMatchesCpu) {
  struct Geometry {
    int64_t batch, in_channels, out_channels, height, width, kernel, stride, padding;
  };
  const Geometry geometries[] = {{2, 3, 5, 9, 7, 3, 1, 1}, {1, 16, 33, 17, 19, 3, 2, 1}, {3, 4, 8, 6, 6, 1, 1, 0}};
  const std::pair<std::string, std::function<std::shared_ptr<BasicOp>()>> activations[] = {
      {"ReLU", [] { return std::make_shared<ReLU>(); }},
      {"GELU", [] { return std::make_shared<GELU>(); }},
      {"none", nullptr}};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (const Geometry& g : geometries) {
      for (const auto& [name, activation] : activations) {
        for (bool fused : {true, false}) {
          const Tensor x = random({g.batch, g.in_channels, g.height, g.width}, dtype, 1);
          const Tensor w = math::scaled(random({g.out_channels, g.in_channels, g.kernel, g.kernel}, dtype, 2), 0.2);
          const Tensor b = math::scaled(random({g.out_channels}, dtype, 3), 0.5);
          expect_gpu_matches_cpu(
              {x, w, b},
              [&](const auto& in) {
                auto conv = std::make_shared<Conv2d>(g.in_channels, g.out_channels, g.kernel, g.stride, g.padding);
                auto bias = std::make_shared<ChannelBias>(g.out_channels);
                conv->parameter(0) = in[1];  // weight and bias under test: leaves whose grads are compared
                bias->parameter(0) = in[2];
                Sequential model({conv, bias});
                if (activation) model.append(activation());
                model.set_fusion_switches(fused);
                EXPECT_EQ(model.describe().find("ForwardConvBiasActivation") != std::string::npos, fused);
                return model(in[0]);
              },
              "Conv2d " + describe({g.batch, g.in_channels, g.height, g.width}) + " kernel " +
                  std::to_string(g.kernel) + " stride " + std::to_string(g.stride) + " + " + name +
                  (fused ? " fused" : " unfused"));
        }
      }
    }
  }
}

// TF32 (opt-in: FUSELAB_ALLOW_TF32=1 or set_allow_tf32) runs float32 GEMMs and convolutions on
// tensor cores with 10-bit mantissas: within 1e-3 of the CPU's float32, on inputs scaled so that
// outputs are O(1).
TEST_F(Cuda, Tf32GemmsAndConvolutionsWithin1e3) {
  struct Tf32On {
    Tf32On() { kernels::cuda::set_allow_tf32(true); }
    ~Tf32On() { kernels::cuda::set_allow_tf32(false); }
  } tf32;
  const Tensor a = math::scaled(random({300, 512}, DType::Float32, 1), 1 / std::sqrt(512.0));
  const Tensor b = math::scaled(random({512, 200}, DType::Float32, 2), 1 / std::sqrt(300.0));
  expect_gpu_matches_cpu({a, b}, [](const auto& in) { return matmul(in[0], in[1]); }, "TF32 matmul", 1e-3);
  const Tensor x = random({4, 16, 12, 12}, DType::Float32, 3);
  const Tensor w = math::scaled(random({8, 16, 3, 3}, DType::Float32, 4), 1 / 12.0);
  expect_gpu_matches_cpu(
      {x, w},
      [](const auto& in) {
        auto conv = std::make_shared<Conv2d>(16, 8, 3, 1, 1);
        conv->parameter(0) = in[1];
        return Sequential({conv})(in[0]);
      },
      "TF32 Conv2d", 1e-3);
}

// A user's basic op that does not declare CUDA kernels (has_cuda_kernels) refuses GPU inputs.
class CpuOnlyDouble : public BasicOp {
 public:
  CpuOnlyDouble() : BasicOp("CpuOnlyDouble") {}
  OpForward op_forward(OpContext&, const Tensor& x, const std::vector<Tensor>&) override {
    check_input(x, -1);
    return {math::scaled(x, 2), {}};
  }
  OpBackward op_backward(OpContext&, const Tensor& dy, const std::vector<Tensor>&) override {
    return {math::scaled(dy, 2), {}, {}};
  }
};

TEST_F(Cuda, OpsWithCpuOnlyKernelsRefuseGpuInputs) {
  Sequential model({std::make_shared<CpuOnlyDouble>()});
  testing::expect_error([&] { model(zeros({2, 8}).to(kGpu)); }, {"CpuOnlyDouble", "cuda:0", "[2, 8]", "CPU-only"});
}

// bfloat16 on the GPU against bfloat16 on the CPU (both compute in float32): the ops and fusions
// that take it, fused and unfused, at a width whose rows take 16-byte loads and cuBLASLt's
// epilogues (48) and one that takes the scalar and GEMM-plus-pass fallbacks (37); the output,
// the input's and every parameter's grad, the clip's norm, and the parameters after an AdamW
// step on float32 masters. Within 3e-2 * (1 + |cpu|): a few bfloat16 roundings apart.
TEST_F(Cuda, BFloat16MatchesCpu) {
  for (int64_t width : {48, 37}) {
    for (bool fused : {true, false}) {
      auto make = [width, fused] {
        Generator gen(3);
        Sequential model;
        model.append(std::make_shared<MakeExtraOutput>());
        model.append(linear_with_bias(width, 4 * width, &gen)).append(std::make_shared<GELU>());
        model.append(linear_with_bias(4 * width, width, &gen)).append(std::make_shared<AddExtraInput>());
        model.append(std::make_shared<RMSNorm>(width)).append(std::make_shared<LayerNorm>(width));
        model.append(linear_with_bias(width, width, &gen)).append(std::make_shared<SiLU>());
        model.to(DType::BFloat16).set_fusion_switches(fused);
        return model;
      };
      Sequential cpu_model = make(), gpu_model = make();
      gpu_model.to(kGpu);
      const Tensor x = random({100, width}, DType::Float32, 4).to(DType::BFloat16);
      auto run = [&](Sequential& model, Device device) {
        Tensor input = x.to(device).detach().set_requires_grad();
        AdamW optimizer(model.parameters(), AdamWOptions{1e-2, 0.9, 0.999, 1e-8, 0.01});
        CachingAllocator::of(kGpu).set_poison(device.is_cuda());
        const SequentialOutput out = model(input, {input});
        const Tensor y = cast(add(out.output, scale(out.extra_outputs.at(0), 0.5)), DType::Float32);
        Generator gen(5);
        backward(sum(mul(y, randn(y.shape(), y.dtype(), &gen).to(device))));
        std::vector<Tensor> results{y, input.grad()};
        for (const Tensor& p : model.parameters()) results.push_back(p.grad().clone());
        results.push_back(full({1}, clip_grad_norm(model.parameters(), 1e9)));
        optimizer.step();
        for (const Tensor& p : model.parameters()) results.push_back(p.clone());
        CachingAllocator::of(kGpu).set_poison(false);
        return results;
      };
      const std::vector<Tensor> cpu = run(cpu_model, Device::cpu()), gpu = run(gpu_model, kGpu);
      ASSERT_EQ(cpu.size(), gpu.size());
      for (size_t i = 0; i < cpu.size(); ++i) {
        const Tensor g = gpu[i].device().is_cuda() ? gpu[i] : gpu[i].to(kGpu);
        // 6e-2: the CPU's fused epilogues round once (oneDNN's post-ops), the emulator's cuBLASLt
        // stand-in runs them after the GEMM and rounds twice; that unit in the last place of pre
        // or y (2^-8) adds up over 100 rows in a weight grad.
        expect_close(g, cpu[i], 6e-2,
                     std::string(fused ? "fused" : "unfused") + " width " + std::to_string(width) + ", tensor " +
                         std::to_string(i));
      }
    }
  }
}

// A mixture of experts' MLP in bfloat16 (Router to MoEUnpermute; the experts fused as
// RoutedGroupedMlp, and not) against the CPU: the output, the input's and every parameter's grad.
TEST_F(Cuda, BFloat16MixtureOfExpertsMatchesCpu) {
  for (bool fused : {true, false}) {
    auto make = [fused] {
      Generator gen(6);
      Sequential model(moe_mlp({16, 12, 4, 2}, "moe", gen).ops);
      model.to(DType::BFloat16).set_fusion_switches(fused);
      return model;
    };
    Sequential cpu_model = make(), gpu_model = make();
    gpu_model.to(kGpu);
    EXPECT_EQ(gpu_model.describe().find("RoutedGroupedMlp") != std::string::npos, fused) << gpu_model.describe();
    const Tensor x = random({50, 16}, DType::Float32, 7).to(DType::BFloat16);
    auto run = [&](Sequential& model, Device device) {
      Tensor input = x.to(device).detach().set_requires_grad();
      const Tensor y = cast(model(input, {}).output, DType::Float32);
      Generator gen(8);
      backward(sum(mul(y, randn(y.shape(), y.dtype(), &gen).to(device))));
      std::vector<Tensor> results{y, input.grad()};
      for (const Tensor& p : model.parameters()) results.push_back(p.grad());
      return results;
    };
    const std::vector<Tensor> cpu = run(cpu_model, Device::cpu()), gpu = run(gpu_model, kGpu);
    ASSERT_EQ(cpu.size(), gpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
      expect_close(gpu[i], cpu[i], 6e-2,
                   std::string(fused ? "fused" : "unfused") + ", tensor " + std::to_string(i));
    }
  }
}

// An id or label out of range on the GPU is found by the kernel that reads it and reported, as a
// fuselab::Error naming it, at the next read from the device; the record is cleared then, so the
// calls after it run as usual. A row whose label is out of range gets no grad.
TEST_F(Cuda, IdsAndLabelsOutOfRangeAreReportedAtTheNextRead) {
  const Tensor table = random({5, 3}, DType::Float32, 1).to(kGpu);
  const Tensor bad_ids = from_vector<int64_t>({0, 4, 7, 1}, {4}).to(kGpu);
  const Tensor looked_up = embedding(table, bad_ids);  // queued: no wait, no error yet
  testing::expect_error([&] { looked_up.to(Device::cpu()); },
                        {"embedding: id 7 at position 2 of the ids out of range for a table of 5 rows", "cuda:0"});
  EXPECT_EQ(embedding(table, from_vector<int64_t>({4, 0}, {2}).to(kGpu)).to(Device::cpu()).shape(), (Shape{2, 3}));

  // Each op's kernels record in their own record: the error names the op instance that found the
  // id, however many other lookups were queued after it.
  auto tokens = std::make_shared<Embedding>(5, 3);
  tokens->set_name("tokens");
  tokens->to(kGpu);
  Sequential model({tokens});
  const Tensor y = model(bad_ids);
  const Tensor other = embedding(table, from_vector<int64_t>({4, 0}, {2}).to(kGpu));
  testing::expect_error([&] { y.to(Device::cpu()); }, {"Embedding(tokens): id 7 at position 2", "cuda:0"});
  EXPECT_EQ(other.to(Device::cpu()).shape(), (Shape{2, 3}));  // the records were cleared

  Tensor logits = random({3, 4}, DType::Float32, 2).to(kGpu);
  logits.set_requires_grad(true);
  const Tensor loss = cross_entropy(logits, from_vector<int64_t>({1, -1, 9}, {3}).to(kGpu), /*ignore_index=*/-1);
  backward(loss);
  testing::expect_error([&] { loss.item(); }, {"cross_entropy: label 9 in row 2 out of range for 4 classes"});
  const std::vector<float> dx = logits.grad().to(Device::cpu()).to_vector<float>();
  for (size_t j = 4; j < dx.size(); ++j) EXPECT_EQ(dx[j], 0.0f) << "the ignored and the bad row, element " << j;
  logits.zero_grad();
  const Tensor good = cross_entropy(logits, from_vector<int64_t>({1, -1, 3}, {3}).to(kGpu), -1);
  const Tensor cpu_loss = cross_entropy(logits.to(Device::cpu()), from_vector<int64_t>({1, -1, 3}, {3}), -1);
  EXPECT_NEAR(good.item(), cpu_loss.item(), 1e-6);
}

TEST_F(Cuda, MixingDevicesIsAClearError) {
  testing::expect_error([] { add(zeros({2}), zeros({2}).to(kGpu)); }, {"add", "cpu", "cuda:0"});
  testing::expect_error([] { matmul(zeros({2, 2}), zeros({2, 2}).to(kGpu)); }, {"matmul", "cpu", "cuda:0"});
  testing::expect_error([] { cross_entropy(zeros({2, 3}).to(kGpu), zeros({2}, DType::Int64)); },
                        {"cross_entropy", "int64", "cpu", "cuda:0"});
  // Every parameter is checked, not only the first: a bias left on the CPU is named.
  auto norm = std::make_shared<LayerNorm>(3);
  norm->weight().set_data(norm->weight().to(kGpu));
  testing::expect_error([&] { Sequential({norm})(zeros({2, 3}).to(kGpu)); },
                        {"LayerNorm", "parameter bias", "cpu", "cuda:0"});
  // So is each parameter a fused op's kernel reads: the experts' second weight on the GPU, the
  // layer on the CPU (RoutedGroupedMlp's kernel would read it from the host).
  Generator gen(3);
  const MoEMlp experts = moe_experts({4, 3, 3, 2}, "moe", gen);
  Sequential layer(experts.ops);
  experts.down->to(kGpu);
  ASSERT_NE(layer.describe().find("RoutedGroupedMlp"), std::string::npos) << layer.describe();
  testing::expect_error(
      [&] { layer(zeros({2, 4}), {from_vector<int64_t>({0, 1, 2, 0}, {2, 2}), zeros({2, 2})}); },
      {"GroupedLinear(", "cpu", "parameter weight float32 on cuda:0"});
}

TEST(CudaBuild, DeviceCountIsSafeWithoutADriver) {
  EXPECT_NO_THROW(kernels::cuda::device_count());  // no driver or GPU: 0, never an exception
}

}  // namespace
}  // namespace fuselab
