// The harness of the op-case table (op_cases.h): every case in every mode, and every registered
// fusion on every device.
// - FiniteDifferences: float64 grads of every input and parameter on the CPU against central
//   differences (autograd/gradcheck.h), for the cases small enough.
// - Float32: float32 on the CPU against float64 on the same (rounded) inputs.
// - Cuda: each CUDA device against the CPU, outputs and every grad, with device memory poisoned
//   (NaN) so unwritten elements show: float64 to 1e-12; float32 against the CPU's float64 on the
//   same inputs, to the case's float32 tolerance or twice the CPU's own float32 error where that
//   is larger (two float32 summation orders differ in the fifth digit over 70000 rows).
// - BFloat16: for the cases that take it, bfloat16 on the CPU and on each device against float32
//   on the CPU on the same rounded inputs, and on each device against bfloat16 on the CPU to 1e-2
//   (both compute in float32 and round once). WithoutBFloat16: the other cases refuse it.
// - Fusions: check_fusion for every registered fusion on its example model, on the CPU and on each
//   device: fused against unfused, outputs and every grad.
// - OpCaseTable: every basic op of ops/basic/ and every functional op of autograd/functional.h
//   (listed from the sources by //tests:source_op_names) has a case.
// Without a CUDA device the CUDA tests report SKIPPED; //tests:op_cases_emulated_test runs them on
// the CUDA emulator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "autograd/functional.h"
#include "autograd/gradcheck.h"
#include "fuser/fusion_check.h"
#include "fuser/operation_fuser.h"
#include "fuser/registry.h"
#include "kernels/cuda/device_api.h"
#include "ops/fused/grouped_mlp.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"
#include "tests/op_cases.h"
#include "tests/source_op_names.h"

namespace fuselab::testing {
namespace {

const Device kCpu = Device::cpu();

// The CUDA devices of this machine: none without CUDA in the build.
std::vector<Device> cuda_devices() {
  std::vector<Device> devices;
  if (!kernels::cuda::compiled_with_cuda()) return devices;
  for (int d = 0; d < kernels::cuda::device_count(); ++d) devices.push_back(Device::cuda(d));
  return devices;
}

// Why the CUDA tests cannot run here, or "" when they can.
std::string why_no_cuda() {
  if (!kernels::cuda::compiled_with_cuda()) return "built without CUDA (--config=cpu)";
  if (kernels::cuda::device_count() == 0) return "no CUDA device: cudaGetDeviceCount found none";
  return "";
}

// Fills every device block handed out with NaN while it lives.
class PoisonDeviceMemory {
 public:
  explicit PoisonDeviceMemory(Device device) : device_(device) {
    if (device_.is_cuda()) CachingAllocator::of(device_).set_poison(true);
  }
  ~PoisonDeviceMemory() {
    if (device_.is_cuda()) CachingAllocator::of(device_).set_poison(false);
  }

 private:
  Device device_;
};

// sum_k sum(output_k * w_k), w_k uniform in [-1, 1) drawn in float64 from seed 100 + k, so that
// every dtype and device sees the same weights (rounded to the output's dtype).
Tensor weighted_loss(const Outputs& outputs) {
  Tensor loss;
  for (size_t k = 0; k < outputs.size(); ++k) {
    Generator gen(100 + k);
    const Tensor& y = outputs[k];
    const Tensor w = uniform(y.shape(), -1, 1, DType::Float64, &gen).to(y.dtype()).to(y.device());
    const Tensor term = sum(mul(y, w));
    loss = loss.defined() ? add(loss, term) : term;
  }
  return loss;
}

// Floating inputs rounded to `dtype` and back to float64: the values a run in `dtype` sees.
Inputs rounded(const Inputs& inputs, DType dtype) {
  Inputs result;
  for (const Tensor& x : inputs) result.push_back(is_floating(x.dtype()) ? x.to(dtype).to(DType::Float64) : x);
  return result;
}

// The outputs of one call and the grads of its floating inputs, each with its label.
struct CaseRun {
  std::vector<Tensor> tensors;
  std::vector<std::string> labels;
};

// Runs the case on the inputs converted to `dtype` (floating ones) and moved to `device`, and
// backpropagates weighted_loss; every output and grad must be of that dtype and on that device.
CaseRun run_case(const OpCase& c, const Inputs& inputs, DType dtype, Device device) {
  Inputs leaves;
  for (const Tensor& x : inputs) {
    const bool floating = is_floating(x.dtype());
    Tensor leaf = (floating ? x.to(dtype) : x).to(device).detach();
    if (floating) leaf.set_requires_grad(true);
    leaves.push_back(leaf);
  }
  const PoisonDeviceMemory poison(device);
  const Outputs outputs = c.run(leaves);
  backward(weighted_loss(outputs));
  CaseRun run;
  for (size_t k = 0; k < outputs.size(); ++k) {
    run.tensors.push_back(outputs[k]);
    run.labels.push_back("output " + std::to_string(k));
  }
  for (size_t k = 0; k < leaves.size(); ++k) {
    if (!leaves[k].requires_grad()) continue;
    run.tensors.push_back(leaves[k].grad());
    run.labels.push_back("grad of input " + std::to_string(k));
  }
  for (size_t i = 0; i < run.tensors.size(); ++i) {
    const Tensor& t = run.tensors[i];
    EXPECT_TRUE(t.defined()) << c.name() << ": " << run.labels[i] << " is missing";
    if (!t.defined()) continue;
    const bool output = i < outputs.size();
    EXPECT_EQ(t.dtype(), output && c.outputs_in_compute_dtype ? compute_dtype(dtype) : dtype)
        << c.name() << ": " << run.labels[i];
    EXPECT_EQ(t.device(), device) << c.name() << ": " << run.labels[i];
  }
  return run;
}

std::vector<double> values_of(const Tensor& t) { return t.to(kCpu).to(DType::Float64).to_vector<double>(); }

// How an error is measured: per element, |a - e| / (1 + |e|); or per tensor, |a - e| over
// 1 + the tensor's largest |e| (for bfloat16, whose rounding follows the tensor's scale).
enum class Relative { ToElement, ToTensor };

double error_of(const Tensor& actual, const Tensor& expected, Relative relative, size_t* worst = nullptr) {
  const std::vector<double> a = values_of(actual), e = values_of(expected);
  double scale = 0;
  for (double v : e) scale = std::max(scale, std::abs(v));
  double max_error = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double error = std::abs(a[i] - e[i]) / (1 + (relative == Relative::ToElement ? std::abs(e[i]) : scale));
    if (!(error <= max_error)) {  // NaN counts as the worst
      max_error = std::isnan(error) ? INFINITY : error;
      if (worst) *worst = i;
    }
  }
  return max_error;
}

void expect_tensor_close(const Tensor& actual, const Tensor& expected, double tolerance, Relative relative,
                         const std::string& what) {
  ASSERT_TRUE(actual.defined() && expected.defined()) << what;
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  size_t worst = 0;
  const double error = error_of(actual, expected, relative, &worst);
  EXPECT_LE(error, tolerance) << what << ": element " << worst << " is " << values_of(actual)[worst]
                              << ", expected " << values_of(expected)[worst];
}

void expect_runs_close(const CaseRun& actual, const CaseRun& expected, double tolerance, Relative relative,
                       const std::string& what) {
  ASSERT_EQ(actual.tensors.size(), expected.tensors.size()) << what;
  for (size_t i = 0; i < actual.tensors.size(); ++i) {
    expect_tensor_close(actual.tensors[i], expected.tensors[i], tolerance, relative, what + ", " + actual.labels[i]);
  }
}

// The parameterized suites take the index of a case in the table.
class CaseTest : public ::testing::TestWithParam<size_t> {
 protected:
  const OpCase& op_case() const { return op_cases()[GetParam()]; }
};

std::vector<size_t> cases_where(const std::function<bool(const OpCase&)>& keep) {
  std::vector<size_t> indices;
  for (size_t i = 0; i < op_cases().size(); ++i) {
    if (keep(op_cases()[i])) indices.push_back(i);
  }
  return indices;
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) { return op_cases()[info.param].name(); }

class FiniteDifferences : public CaseTest {};

TEST_P(FiniteDifferences, Float64OnCpu) {
  const OpCase& c = op_case();
  const GradCheckResult result = check_gradients([&](const Inputs& in) { return weighted_loss(c.run(in)); },
                                                 c.make_inputs(), c.finite_difference_step);
  EXPECT_LT(result.max_error, c.finite_difference_tolerance) << result.worst;
}

INSTANTIATE_TEST_SUITE_P(OpCases, FiniteDifferences,
                         ::testing::ValuesIn(cases_where([](const OpCase& c) { return c.fits_finite_differences(); })),
                         case_name);

class Float32 : public CaseTest {};

TEST_P(Float32, MatchesFloat64OnCpu) {
  const OpCase& c = op_case();
  const Inputs inputs = rounded(c.make_inputs(), DType::Float32);
  expect_runs_close(run_case(c, inputs, DType::Float32, kCpu), run_case(c, inputs, DType::Float64, kCpu),
                    c.float32_tolerance, Relative::ToElement, "float32 on the CPU against float64");
}

INSTANTIATE_TEST_SUITE_P(OpCases, Float32, ::testing::ValuesIn(cases_where([](const OpCase&) { return true; })),
                         case_name);

class Cuda : public CaseTest {};

TEST_P(Cuda, MatchesCpuOnEveryDevice) {
  if (const std::string why = why_no_cuda(); !why.empty()) GTEST_SKIP() << why;
  const OpCase& c = op_case();
  const Inputs inputs = c.make_inputs(), inputs32 = rounded(inputs, DType::Float32);
  const CaseRun cpu64 = run_case(c, inputs, DType::Float64, kCpu);
  const CaseRun exact32 = run_case(c, inputs32, DType::Float64, kCpu);
  const CaseRun cpu32 = run_case(c, inputs32, DType::Float32, kCpu);
  for (const Device& device : cuda_devices()) {
    const std::string on = " on " + device.str();
    expect_runs_close(run_case(c, inputs, DType::Float64, device), cpu64, 1e-12, Relative::ToElement, "float64" + on);
    const CaseRun gpu32 = run_case(c, inputs32, DType::Float32, device);
    for (size_t i = 0; i < gpu32.tensors.size(); ++i) {
      const double cpu_error = error_of(cpu32.tensors[i], exact32.tensors[i], Relative::ToElement);
      expect_tensor_close(gpu32.tensors[i], exact32.tensors[i], std::max(c.float32_tolerance, 2 * cpu_error),
                          Relative::ToElement, "float32" + on + " against float64 on the CPU, " + gpu32.labels[i]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(OpCases, Cuda, ::testing::ValuesIn(cases_where([](const OpCase&) { return true; })),
                         case_name);

class BFloat16 : public CaseTest {};

TEST_P(BFloat16, MatchesFloat32OnCpu) {
  const OpCase& c = op_case();
  const Inputs inputs = rounded(c.make_inputs(), DType::BFloat16);
  expect_runs_close(run_case(c, inputs, DType::BFloat16, kCpu), run_case(c, inputs, DType::Float32, kCpu),
                    c.bfloat16_tolerance, Relative::ToTensor, "bfloat16 on the CPU against float32");
}

// Against float32 on the CPU, and to 1e-2 against bfloat16 on the CPU.
TEST_P(BFloat16, MatchesCpuOnCuda) {
  if (const std::string why = why_no_cuda(); !why.empty()) GTEST_SKIP() << why;
  const OpCase& c = op_case();
  const Inputs inputs = rounded(c.make_inputs(), DType::BFloat16);
  const CaseRun cpu32 = run_case(c, inputs, DType::Float32, kCpu), cpu16 = run_case(c, inputs, DType::BFloat16, kCpu);
  for (const Device& device : cuda_devices()) {
    const CaseRun gpu16 = run_case(c, inputs, DType::BFloat16, device);
    const std::string on = "bfloat16 on " + device.str();
    expect_runs_close(gpu16, cpu32, c.bfloat16_tolerance, Relative::ToTensor, on + " against float32 on the CPU");
    expect_runs_close(gpu16, cpu16, 1e-2, Relative::ToElement, on + " against bfloat16 on the CPU");
  }
}

INSTANTIATE_TEST_SUITE_P(OpCases, BFloat16,
                         ::testing::ValuesIn(cases_where([](const OpCase& c) { return c.takes_bfloat16; })),
                         case_name);

class WithoutBFloat16 : public CaseTest {};

// An error that names bfloat16; a case that runs in it should say bfloat16().
void expect_bfloat16_refused(const OpCase& c, Device device) {
  const Inputs inputs = rounded(c.make_inputs(), DType::BFloat16);
  SCOPED_TRACE(c.name() + " in bfloat16 on " + device.str());
  expect_error([&] { run_case(c, inputs, DType::BFloat16, device); }, {"bfloat16"});
}

TEST_P(WithoutBFloat16, IsRefusedOnCpu) { expect_bfloat16_refused(op_case(), kCpu); }

TEST_P(WithoutBFloat16, IsRefusedOnCuda) {
  if (const std::string why = why_no_cuda(); !why.empty()) GTEST_SKIP() << why;
  for (const Device& device : cuda_devices()) expect_bfloat16_refused(op_case(), device);
}

INSTANTIATE_TEST_SUITE_P(OpCases, WithoutBFloat16,
                         ::testing::ValuesIn(cases_where([](const OpCase& c) { return !c.takes_bfloat16; })),
                         case_name);

// The fusion on its example model, on random sizes as the fusion lab draws them: check_fusion on
// the device (with finite differences in float64 on the CPU).
void expect_fusion_matches_unfused(const std::string& name, Device device) {
  const FusionExampleMaker maker = fusion_example(name);
  ASSERT_TRUE(maker) << name << " has no example model: register one with register_fusion_example";
  Generator gen(5);
  for (DType dtype : {DType::Float64, DType::Float32}) {
    for (int trial = 0; trial < 3; ++trial) {
      const int64_t rows = 1 + int64_t(gen.next_u64() % 40), width = 1 + int64_t(gen.next_u64() % 24);
      SCOPED_TRACE(name + " " + dtype_name(dtype) + " on " + device.str() + ", rows " + std::to_string(rows) +
                   " width " + std::to_string(width));
      FusionExample e = maker(rows, width, dtype, gen);
      Sequential seq(e.ops);
      seq.to(device);
      std::vector<Tensor> extras;
      for (const Tensor& extra : e.extra_inputs) extras.push_back(extra.to(device));
      const PoisonDeviceMemory poison(device);
      const FusionCheckResult result = check_fusion(name, seq, e.input.to(device), extras);
      EXPECT_TRUE(result.ok) << result.problem << "\n" << result.lists;
      if (dtype == DType::Float64 && device.is_cpu()) {
        EXPECT_GE(result.finite_difference_error, 0);  // check_fusion's finite differences ran
      }
    }
  }
}

class Fusions : public ::testing::TestWithParam<std::string> {};

TEST_P(Fusions, MatchUnfusedOnCpu) { expect_fusion_matches_unfused(GetParam(), kCpu); }

TEST_P(Fusions, MatchUnfusedOnCuda) {
  if (const std::string why = why_no_cuda(); !why.empty()) GTEST_SKIP() << why;
  for (const Device& device : cuda_devices()) expect_fusion_matches_unfused(GetParam(), device);
}

INSTANTIATE_TEST_SUITE_P(Registered, Fusions, ::testing::ValuesIn(registered_fusion_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The fused experts' MLPs as a program may register them, keeping the GLU's output for backward
// instead of recomputing it (ops/fused/grouped_mlp.h): the same checks, on every device.
void expect_kept_activation_matches_unfused(const std::vector<Device>& devices) {
  for (const FusionDefinition& fusion :
       {routed_grouped_mlp_fusion(false), grouped_mlp_fusion(false), scaled_grouped_mlp_fusion(false)}) {
    const ScopedFusion registered(register_forward_backward_fusion(fusion.name, fusion.fn));
    register_fusion_example(fusion.name, fusion.example);
    for (const Device& device : devices) expect_fusion_matches_unfused(fusion.name, device);
  }
}

TEST(FusionsKeepingTheActivation, MatchUnfusedOnCpu) { expect_kept_activation_matches_unfused({kCpu}); }

TEST(FusionsKeepingTheActivation, MatchUnfusedOnCuda) {
  if (const std::string why = why_no_cuda(); !why.empty()) GTEST_SKIP() << why;
  expect_kept_activation_matches_unfused(cuda_devices());
}

// The concrete basic ops: classes that derive from BasicOp, directly or through other classes of
// ops/basic/, and that no class there derives from (so ActivationOp is left out, ReLU is in).
std::set<std::string> basic_ops_in_sources() {
  std::map<std::string, std::string> base_of;
  std::set<std::string> bases;
  for (const auto& [name, base] : kBasicOpClassesAndBases) {
    base_of[name] = base;
    bases.insert(base);
  }
  std::set<std::string> ops;
  for (const auto& [name, base] : base_of) {
    std::string ancestor = base;
    while (base_of.count(ancestor)) ancestor = base_of[ancestor];
    if (ancestor == "BasicOp" && !bases.count(name)) ops.insert(name);
  }
  return ops;
}

TEST(OpCaseTable, EveryBasicOpAndFunctionalOpHasACase) {
  std::set<std::string> in_sources = basic_ops_in_sources();
  // The lists come from the sources: a broken listing must not pass as "nothing to cover".
  ASSERT_TRUE(in_sources.count("Linear") && in_sources.count("ReLU") && !in_sources.count("ActivationOp"));
  for (const char* name : kFunctionalOps) in_sources.insert(name);
  ASSERT_TRUE(in_sources.count("matmul") && in_sources.count("cross_entropy"));

  std::set<std::string> with_case, with_small_case;
  for (const OpCase& c : op_cases()) {
    with_case.insert(c.op);
    if (c.fits_finite_differences()) with_small_case.insert(c.op);
  }
  for (const std::string& name : in_sources) {
    EXPECT_TRUE(with_case.count(name)) << name << " has no case: add one to tests/op_cases.cc";
    EXPECT_TRUE(with_small_case.count(name))
        << name << " has no case of at most " << kFiniteDifferenceElements
        << " floating input elements, so finite differences never check it";
  }
  for (const std::string& name : with_case) {
    EXPECT_TRUE(in_sources.count(name)) << "a case names " << name
                                        << ", which is no basic op of ops/basic/ nor function of autograd/functional.h";
  }
}

}  // namespace
}  // namespace fuselab::testing
