#include "runtime/machine_limits.h"

#include <immintrin.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/isa.h"

namespace fuselab::runtime {
namespace {

// An FMA's result is ready 4 cycles after it starts and a core starts 2 per cycle, so at least
// 8 independent chains keep both pipes busy; 12 leave margin and fit the 16 AVX2 registers.
constexpr int kChains = 12;
constexpr int64_t kSteps = 1 << 21;  // a few milliseconds per run
constexpr int kRuns = 10;

// The chains' sum lands here, so the compiler must do the work.
volatile float fma_sink;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Each chain steps acc = acc * a + b, kSteps times: kSteps x kChains x 16 lanes x 2 flops. The
// chain converges to b / (1 - a), so the values stay normal.
FUSELAB_TARGET_AVX512 double fma_seconds_avx512() {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(float(c));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < kSteps; ++s) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  const double seconds = seconds_since(start);
  for (int c = 1; c < kChains; ++c) acc[0] = _mm512_add_ps(acc[0], acc[c]);
  fma_sink = _mm512_cvtss_f32(acc[0]);
  return seconds;
}

// The same with 8 lanes.
__attribute__((target("avx2,fma"))) double fma_seconds_avx2() {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(float(c));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < kSteps; ++s) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  const double seconds = seconds_since(start);
  for (int c = 1; c < kChains; ++c) acc[0] = _mm256_add_ps(acc[0], acc[c]);
  fma_sink = _mm256_cvtss_f32(acc[0]);
  return seconds;
}

size_t last_level_cache_bytes() {
  for (int level : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long bytes = sysconf(level);
    if (bytes > 0) return size_t(bytes);
  }
  return size_t(32) << 20;  // unknown: assume a large one
}

}  // namespace

std::optional<double> fma_peak_gflops() {
  const bool avx512 = kernels::cpu::use_avx512();
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return std::nullopt;
  const int lanes = avx512 ? 16 : 8;
  double best = 1e30;
  for (int r = 0; r < kRuns; ++r) best = std::min(best, avx512 ? fma_seconds_avx512() : fma_seconds_avx2());
  return double(kSteps) * kChains * lanes * 2 / best / 1e9;
}

double copy_bandwidth_gbps(int threads) {
  const size_t bytes = 4 * last_level_cache_bytes();
  std::vector<char> from(bytes, 1), to(bytes, 0);  // touched once here, so no page faults are timed
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
    {
      const size_t part = bytes / size_t(omp_get_num_threads()), begin = part * size_t(omp_get_thread_num());
      const size_t end = omp_get_thread_num() + 1 == omp_get_num_threads() ? bytes : begin + part;
      std::memcpy(to.data() + begin, from.data() + begin, end - begin);
    }
    best = std::min(best, seconds_since(start));
  }
  return 2.0 * double(bytes) / best / 1e9;
}

}  // namespace fuselab::runtime
