// The CPU GEMM libraries (kernels/cpu/gemm.h), OpenBLAS and oneDNN, each against a float64
// reference: plain GEMMs (transposes, alpha, beta, leading dimensions) and GEMMs with an epilogue
// (bias, activation, addend), in float32 and bfloat16; and where each library runs the epilogue
// of the fused Linear kernels; and the Matmul kernel adding into its own output (beta = 1, oneDNN's
// sum post-op), as a weight grad accumulates. //tests:cpu_gemm_avx2_test runs this file with oneDNN capped at
// AVX2, where it has no bfloat16 matmul and those calls must fall back to OpenBLAS.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <utility>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/host_context.h"
#include "kernels/cpu/onednn.h"
#include "kernels/linear_epilogue.h"
#include "kernels/matmul.h"

namespace fuselab::kernels::cpu {
namespace {

struct Problem {
  bool transpose_a, transpose_b;
  int64_t m, n, k;
  int64_t lda() const { return transpose_a ? m : k; }
  int64_t ldb() const { return transpose_b ? k : n; }
};

// The last four are larger than kSmallGemm, so float32 gemm() calls meet both libraries under
// oneDNN, in every transpose pair.
const Problem kProblems[] = {{false, true, 33, 20, 17}, {true, false, 17, 33, 20}, {false, false, 5, 7, 3},
                             {true, true, 16, 16, 64},  {false, true, 70, 65, 33}, {true, false, 65, 33, 70},
                             {false, false, 33, 70, 65}, {true, true, 70, 33, 65}};

template <class T>
std::vector<T> random_values(int64_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<T> values(static_cast<size_t>(count));
  for (T& v : values) v = T(uniform(gen));
  return values;
}

// op(A) op(B) in float64 from the stored operands (tight leading dimensions unless given).
template <class T>
std::vector<double> reference_product(const Problem& p, const std::vector<T>& a, const std::vector<T>& b,
                                      int64_t lda, int64_t ldb) {
  std::vector<double> c(static_cast<size_t>(p.m * p.n));
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = 0;
      for (int64_t l = 0; l < p.k; ++l) {
        const double ail = double(p.transpose_a ? a[l * lda + i] : a[i * lda + l]);
        const double blj = double(p.transpose_b ? b[j * ldb + l] : b[l * ldb + j]);
        sum += ail * blj;
      }
      c[i * p.n + j] = sum;
    }
  }
  return c;
}

double activated(Activation act, double x) {
  double y = x;
  with_activation(act, [&](auto math) { y = decltype(math)::forward(x); });
  return y;
}

// float32 to its accumulation error over k = 64; bfloat16 to two units in the last place, for the
// two roundings of a GEMM whose epilogue runs in its own pass, times `growth`: an activation that
// squares its input (SReLU) doubles the relative error of the rounded sum it reads.
template <class T>
void expect_near_reference(const T* got, const std::vector<double>& want, const char* what, double growth = 1) {
  const double tolerance = growth * (std::is_same_v<T, bfloat16> ? 1.6e-2 : 2e-5);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(double(got[i]), want[i], tolerance * std::max(1.0, std::abs(want[i]))) << what << " at " << i;
  }
}

// Whether oneDNN can run T here: bfloat16 needs AVX-512 (DNNL_MAX_CPU_ISA may cap it below).
template <class T>
bool onednn_expected_for() {
  return !std::is_same_v<T, bfloat16> || onednn_isa().rfind("avx512", 0) == 0;
}

class CpuGemmTest : public ::testing::TestWithParam<CpuGemm> {
 protected:
  void SetUp() override { set_cpu_gemm(GetParam()); }
  void TearDown() override { set_cpu_gemm(std::nullopt); }
  template <class T>
  bool epilogue_in_gemm() const {
    return GetParam() == CpuGemm::Onednn && onednn_expected_for<T>();
  }
  template <class T>
  void check_library() const {
    EXPECT_EQ(cpu_gemm<T>(), epilogue_in_gemm<T>() ? CpuGemm::Onednn : CpuGemm::OpenBlas);
  }
  template <class T>
  void check_epilogues();
  template <class T>
  void check_alpha_beta_and_leading_dimensions();
  template <class T>
  void check_linear_kernels();
  template <class T>
  void check_matmul_into_its_output();
};

template <class T>
void CpuGemmTest::check_epilogues() {
  struct Epilogue {
    const char* name;
    bool bias, addend;
    Activation act;
  };
  const Epilogue epilogues[] = {{"none", false, false, Activation::None},  {"bias", true, false, Activation::None},
                                {"bias+ReLU", true, false, Activation::ReLU}, {"bias+GELU", true, false, Activation::GELU},
                                {"bias+SiLU", true, false, Activation::SiLU}, {"bias+Sigmoid", true, false, Activation::Sigmoid},
                                {"bias+QGELU", true, false, Activation::QGELU}, {"bias+SReLU", true, false, Activation::SReLU},
                                {"addend", false, true, Activation::None},
                                {"bias+addend", true, true, Activation::None}};
  for (const Problem& p : kProblems) {
    const std::vector<T> a = random_values<T>(p.m * p.k, 1), b = random_values<T>(p.k * p.n, 2);
    const std::vector<T> bias = random_values<T>(p.n, 3), addend = random_values<T>(p.m * p.n, 4);
    const std::vector<double> product = reference_product(p, a, b, p.lda(), p.ldb());
    for (const Epilogue& e : epilogues) {
      SCOPED_TRACE(::testing::Message() << e.name << " m " << p.m << " n " << p.n << " k " << p.k << " ta "
                                        << p.transpose_a << " tb " << p.transpose_b);
      std::vector<double> want = product;
      for (int64_t i = 0; i < p.m * p.n; ++i) {
        const double sum = want[i] + (e.bias ? double(bias[i % p.n]) : 0) + (e.addend ? double(addend[i]) : 0);
        want[i] = activated(e.act, sum);
      }
      std::vector<T> c(static_cast<size_t>(p.m * p.n), T(7.f));
      const bool in_gemm = gemm_with_epilogue<T>(p.transpose_a, p.transpose_b, p.m, p.n, p.k, a.data(), p.lda(),
                                                 b.data(), p.ldb(),
                                                 {e.bias ? bias.data() : nullptr, e.addend ? addend.data() : nullptr,
                                                  e.act},
                                                 c.data());
      EXPECT_EQ(in_gemm, epilogue_in_gemm<T>());
      expect_near_reference(c.data(), want, e.name, e.act == Activation::SReLU ? 2 : 1);
    }
  }
}

TEST_P(CpuGemmTest, EpiloguesMatchFloat64InFloat32) { check_epilogues<float>(); }
TEST_P(CpuGemmTest, EpiloguesMatchFloat64InBFloat16) { check_epilogues<bfloat16>(); }

// C = alpha op(A) op(B) + beta C on padded rows: the padding is never written (attention's calls);
// with the shape's own oneDNN primitive and with the one for every shape (GemmShape::Varying).
template <class T>
void CpuGemmTest::check_alpha_beta_and_leading_dimensions() {
  for (const Problem& p : kProblems) {
    for (const auto& [beta, shape] : {std::pair{0.f, GemmShape::Recurring}, {1.f, GemmShape::Recurring},
                                      {0.25f, GemmShape::Recurring}, {0.f, GemmShape::Varying},
                                      {1.f, GemmShape::Varying}, {0.25f, GemmShape::Varying}}) {
      SCOPED_TRACE(::testing::Message() << "beta " << beta << " m " << p.m << " n " << p.n << " k " << p.k
                                        << (shape == GemmShape::Varying ? " varying" : " recurring"));
      const int64_t lda = p.lda() + 2, ldb = p.ldb() + 1, ldc = p.n + 3;
      const std::vector<T> a = random_values<T>((p.transpose_a ? p.k : p.m) * lda, 5);
      const std::vector<T> b = random_values<T>((p.transpose_b ? p.n : p.k) * ldb, 6);
      std::vector<T> c = random_values<T>(p.m * ldc, 7);
      const std::vector<T> c_before = c;
      const std::vector<double> product = reference_product(p, a, b, lda, ldb);
      std::vector<double> want(product.size());
      for (int64_t i = 0; i < p.m * p.n; ++i) {
        want[i] = 0.5 * product[i] + double(beta) * double(c_before[(i / p.n) * ldc + i % p.n]);
      }
      gemm<T>(p.transpose_a, p.transpose_b, p.m, p.n, p.k, T(0.5f), a.data(), lda, b.data(), ldb, T(beta), c.data(),
              ldc, shape);
      std::vector<T> rows(want.size());
      for (int64_t r = 0; r < p.m; ++r) {
        std::copy_n(c.begin() + r * ldc, p.n, rows.begin() + r * p.n);
        ASSERT_EQ(std::memcmp(&c[r * ldc + p.n], &c_before[r * ldc + p.n], (ldc - p.n) * sizeof(T)), 0) << "row " << r;
      }
      expect_near_reference(rows.data(), want, "gemm");
    }
  }
}

TEST_P(CpuGemmTest, AlphaBetaAndLeadingDimensionsInFloat32) { check_alpha_beta_and_leading_dimensions<float>(); }
TEST_P(CpuGemmTest, AlphaBetaAndLeadingDimensionsInBFloat16) { check_alpha_beta_and_leading_dimensions<bfloat16>(); }

// The fused Linear kernels: y = act(x W^T + b) with the epilogue in the GEMM where pre is not
// kept; pre = x W^T + b and y = act(pre) where it is; y = x W^T + b + residual.
template <class T>
void CpuGemmTest::check_linear_kernels() {
  const int64_t rows = 9, in = 12, out = 10;
  const Problem p{false, true, rows, out, in};
  const std::vector<T> x = random_values<T>(rows * in, 8), w = random_values<T>(out * in, 9);
  const std::vector<T> b = random_values<T>(out, 10), residual = random_values<T>(rows * out, 11);
  std::vector<double> pre_want = reference_product(p, x, w, in, in), y_want(pre_want.size()), sum_want(pre_want.size());
  for (int64_t i = 0; i < rows * out; ++i) {
    pre_want[i] += double(b[i % out]);
    y_want[i] = activated(Activation::GELU, pre_want[i]);
    sum_want[i] = pre_want[i] + double(residual[i]);
  }
  HostContext ctx;
  std::vector<T> y(rows * out), pre(rows * out);
  EpiloguePath path = EpiloguePath::FellBack;
  LinearBiasActivationForward<T>{x.data(), w.data(), b.data(), Activation::GELU, nullptr, y.data(), rows, in, out, &path}
      .cpu(ctx);
  EXPECT_EQ(path, epilogue_in_gemm<T>() ? EpiloguePath::InGemm : EpiloguePath::OwnPass);
  expect_near_reference(y.data(), y_want, "y without pre");

  std::fill(y.begin(), y.end(), T(0.f));
  LinearBiasActivationForward<T>{x.data(), w.data(), b.data(), Activation::GELU, pre.data(), y.data(), rows, in, out,
                                 &path}
      .cpu(ctx);
  EXPECT_EQ(path, EpiloguePath::OwnPass);
  expect_near_reference(pre.data(), pre_want, "pre");
  expect_near_reference(y.data(), y_want, "y with pre");

  LinearBiasAddForward<T>{x.data(), w.data(), b.data(), residual.data(), y.data(), rows, in, out, &path}.cpu(ctx);
  EXPECT_EQ(path, epilogue_in_gemm<T>() ? EpiloguePath::InGemm : EpiloguePath::OwnPass);
  expect_near_reference(y.data(), sum_want, "y + residual");
}

TEST_P(CpuGemmTest, LinearKernelsRunTheirEpilogueInTheGemmWhereTheLibraryCanInFloat32) {
  check_linear_kernels<float>();
}
TEST_P(CpuGemmTest, LinearKernelsRunTheirEpilogueInTheGemmWhereTheLibraryCanInBFloat16) {
  check_linear_kernels<bfloat16>();
}

// out_i += op(a_i) op(b_i), over a batch of two: the addend is out itself.
template <class T>
void CpuGemmTest::check_matmul_into_its_output() {
  for (const Problem& p : kProblems) {
    SCOPED_TRACE(::testing::Message() << "m " << p.m << " n " << p.n << " k " << p.k << " ta " << p.transpose_a
                                      << " tb " << p.transpose_b);
    const int64_t batch = 2, mk = p.m * p.k, kn = p.k * p.n, mn = p.m * p.n;
    const std::vector<T> a = random_values<T>(batch * mk, 12), b = random_values<T>(batch * kn, 13);
    std::vector<T> out = random_values<T>(batch * mn, 14);
    std::vector<double> want(out.begin(), out.end());
    for (int64_t i = 0; i < batch; ++i) {
      const std::vector<T> a_i(a.begin() + i * mk, a.begin() + (i + 1) * mk),
          b_i(b.begin() + i * kn, b.begin() + (i + 1) * kn);
      const std::vector<double> product = reference_product(p, a_i, b_i, p.lda(), p.ldb());
      for (int64_t j = 0; j < mn; ++j) want[i * mn + j] += product[j];
    }
    HostContext ctx;
    Matmul<T>{p.transpose_a, p.transpose_b, batch, p.m, p.n, p.k, a.data(), b.data(), out.data(), out.data()}.cpu(ctx);
    expect_near_reference(out.data(), want, "out += a b");
  }
}

TEST_P(CpuGemmTest, MatmulAddsIntoItsOutputInFloat32) { check_matmul_into_its_output<float>(); }
TEST_P(CpuGemmTest, MatmulAddsIntoItsOutputInBFloat16) { check_matmul_into_its_output<bfloat16>(); }

TEST_P(CpuGemmTest, Float32RunsOnTheChosenLibrary) { check_library<float>(); }
TEST_P(CpuGemmTest, BFloat16RunsOnOneDnnWhereItHasAvx512) { check_library<bfloat16>(); }
TEST_P(CpuGemmTest, SmallFloat32GemmsRunOnOpenBlas) {
  EXPECT_EQ(gemm_library<float>(64, 64, 32), CpuGemm::OpenBlas);
  EXPECT_EQ(gemm_library<float>(1, 1, 1), CpuGemm::OpenBlas);
  EXPECT_EQ(gemm_library<float>(64, 64, 33), cpu_gemm<float>());
  for (size_t i = std::size(kProblems) - 4; i < std::size(kProblems); ++i) {
    const Problem& p = kProblems[i];
    EXPECT_EQ(gemm_library<float>(p.m, p.n, p.k), cpu_gemm<float>());
  }
  EXPECT_EQ(gemm_library<bfloat16>(1, 1, 1), cpu_gemm<bfloat16>());  // OpenBLAS would widen it first
}
TEST_P(CpuGemmTest, Float64StaysOnOpenBlas) { EXPECT_EQ(cpu_gemm<double>(), CpuGemm::OpenBlas); }

INSTANTIATE_TEST_SUITE_P(Libraries, CpuGemmTest, ::testing::Values(CpuGemm::OpenBlas, CpuGemm::Onednn),
                         [](const ::testing::TestParamInfo<CpuGemm>& info) {
                           return info.param == CpuGemm::Onednn ? "oneDNN" : "OpenBLAS";
                         });

}  // namespace
}  // namespace fuselab::kernels::cpu
