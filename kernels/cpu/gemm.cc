#include "kernels/cpu/gemm.h"

#include <cblas.h>  // only for the CBLAS enum values; the functions come from openblas()

#include <stdexcept>
#include <type_traits>
#include <vector>

#include "kernels/cpu/bias_activation.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/onednn.h"
#include "kernels/cpu/openblas.h"
#include "kernels/cpu/threading.h"
#include "runtime/settings.h"

namespace fuselab::kernels::cpu {
namespace {

// FUSELAB_CPU_GEMM (runtime/settings.h), or none: each GEMM then picks by its size.
std::optional<CpuGemm> gemm_from_settings() {
  const std::string& name = runtime::settings().cpu_gemm;
  if (name.empty()) return std::nullopt;
  return name == "openblas" ? CpuGemm::OpenBlas : CpuGemm::Onednn;
}

// Read on the first GEMM; a bad setting throws again on every GEMM, since the static is never set.
std::optional<CpuGemm>& chosen_gemm() {
  static std::optional<CpuGemm> chosen = gemm_from_settings();
  return chosen;
}

int flag(bool transpose) { return transpose ? CblasTrans : CblasNoTrans; }

// The float32 copy of a [rows, cols] matrix with leading dimension ld (the elements it spans).
std::vector<float> widen(const bfloat16* x, int64_t rows, int64_t cols, int64_t ld) {
  const int64_t span = rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols;
  return std::vector<float>(x, x + span);
}

void openblas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  openblas().sgemm(CblasRowMajor, flag(ta), flag(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void openblas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                   const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  openblas().dgemm(CblasRowMajor, flag(ta), flag(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// OpenBLAS has no bfloat16 GEMM in Debian's build: the operands are widened to float32, multiplied
// by sgemm (float32 accumulation, as on the GPU), and the result rounded once into C.
void openblas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, bfloat16 alpha, const bfloat16* a, int64_t lda,
                   const bfloat16* b, int64_t ldb, bfloat16 beta, bfloat16* c, int64_t ldc) {
  const std::vector<float> a32 = widen(a, ta ? k : m, ta ? m : k, lda), b32 = widen(b, tb ? n : k, tb ? k : n, ldb);
  std::vector<float> c32 = float(beta) != 0 ? widen(c, m, n, ldc) : std::vector<float>(size_t((m - 1) * ldc + n));
  openblas_gemm(ta, tb, m, n, k, float(alpha), a32.data(), lda, b32.data(), ldb, float(beta), c32.data(), ldc);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) c[r * ldc + j] = bfloat16(c32[size_t(r * ldc + j)]);
  }
}

// C = act(C + bias + addend), one pass over a GEMM's output that could not take the epilogue.
template <class T>
void epilogue_pass(const GemmEpilogue<T>& e, T* c, int64_t m, int64_t n) {
  if (!e.addend) {
    if (!e.bias && e.act == Activation::None) return;
    const std::vector<T> no_bias(e.bias ? 0 : size_t(n));
    bias_activation_forward<T>(e.act, e.bias ? e.bias : no_bias.data(), c, nullptr, m, n);
    return;
  }
#pragma omp parallel for schedule(static) if (m * n > kParallelGrain)
  for (int64_t r = 0; r < m; ++r) {
    T* cr = c + r * n;
    const T* ar = e.addend + r * n;
    if (e.bias) {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) cr[j] = T(compute_t<T>(cr[j]) + compute_t<T>(e.bias[j]) + compute_t<T>(ar[j]));
    } else {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) cr[j] = T(compute_t<T>(cr[j]) + compute_t<T>(ar[j]));
    }
  }
}

}  // namespace

// Unset, float32 GEMMs run on oneDNN where the CPU has AVX-512 and on OpenBLAS where it has not: on
// an AVX2-only CPU OpenBLAS ran the mlp_block's GEMMs at 59-61% of the FMA peak against oneDNN's
// 45-48%, and the MoE block 1.24-1.46x faster, with the GPT and llama blocks alike (bench/RESULTS.md,
// "The CPU GEMM library on an AVX2 CPU").
template <class T>
CpuGemm cpu_gemm() {
  if constexpr (std::is_same_v<T, double>) {
    return CpuGemm::OpenBlas;
  } else {
    const CpuGemm preferred = std::is_same_v<T, float> && !cpu_has_avx512() ? CpuGemm::OpenBlas : CpuGemm::Onednn;
    const bool onednn = chosen_gemm().value_or(preferred) == CpuGemm::Onednn;
    return onednn && onednn_runs<T>() ? CpuGemm::Onednn : CpuGemm::OpenBlas;
  }
}

bool onednn_convolutions() { return chosen_gemm() != CpuGemm::OpenBlas && onednn_runs<float>(); }

template <class T>
CpuGemm gemm_library(int64_t m, int64_t n, int64_t k) {
  if (std::is_same_v<T, float> && m * n * k <= kSmallGemm) return CpuGemm::OpenBlas;
  return cpu_gemm<T>();
}

void set_cpu_gemm(std::optional<CpuGemm> backend) { chosen_gemm() = backend ? backend : gemm_from_settings(); }

std::string cpu_gemm_description() {
  auto name = [](CpuGemm g) { return g == CpuGemm::Onednn ? "oneDNN" : "OpenBLAS"; };
  const char* small = cpu_gemm<float>() == CpuGemm::Onednn ? " (OpenBLAS up to 64x64x32)" : "";
  return std::string("CPU GEMMs: float32 ") + name(cpu_gemm<float>()) + small + ", bfloat16 " +
         name(cpu_gemm<bfloat16>()) + ", float64 OpenBLAS; oneDNN ISA " + onednn_isa() + ", OpenBLAS kernels " +
         openblas().core;
}

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc, GemmShape shape) {
  if (m == 0 || n == 0) return;
  if constexpr (!std::is_same_v<T, double>) {
    if (gemm_library<T>(m, n, k) == CpuGemm::Onednn &&
        onednn_matmul<T>({ta, tb, m, n, k, float(alpha), float(beta), a, lda, b, ldb, nullptr, nullptr,
                          Activation::None, c, ldc, shape == GemmShape::Varying})) {
      return;
    }
  }
  openblas_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <class T>
bool gemm_with_epilogue(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                        int64_t ldb, const GemmEpilogue<T>& e, T* c) {
  if (e.act != Activation::None && e.addend) {
    throw std::invalid_argument("gemm_with_epilogue: an activation with an addend is not an epilogue FuseLab has");
  }
  if (e.bias && e.alpha != 1) {
    throw std::invalid_argument("gemm_with_epilogue: alpha with a bias is not an epilogue FuseLab has");
  }
  if (m == 0 || n == 0) return true;
  if constexpr (!std::is_same_v<T, double>) {
    if (cpu_gemm<T>() == CpuGemm::Onednn &&
        onednn_matmul<T>({ta, tb, m, n, k, float(e.alpha), 0.f, a, lda, b, ldb, e.bias, e.addend, e.act, c, n})) {
      return true;
    }
  }
  gemm<T>(ta, tb, m, n, k, T(e.alpha), a, lda, b, ldb, T(0), c, n);
  epilogue_pass(e, c, m, n);
  return false;
}

#define FUSELAB_INSTANTIATE(T)                                                                                    \
  template CpuGemm cpu_gemm<T>();                                                                                 \
  template CpuGemm gemm_library<T>(int64_t, int64_t, int64_t);                                                    \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*,  \
                        int64_t, GemmShape);                                                                      \
  template bool gemm_with_epilogue<T>(bool, bool, int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, \
                                      const GemmEpilogue<T>&, T*);
FUSELAB_INSTANTIATE(float)
FUSELAB_INSTANTIATE(double)
FUSELAB_INSTANTIATE(bfloat16)
#undef FUSELAB_INSTANTIATE

}  // namespace fuselab::kernels::cpu
