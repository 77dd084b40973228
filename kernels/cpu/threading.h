// The number of CPU threads FuseLab's kernels and OpenBLAS use: FUSELAB_NUM_THREADS, or all cores.
#pragma once

#include <cstdint>

namespace fuselab::kernels::cpu {

int num_threads();
void set_num_threads(int threads);

// Elementwise and row kernels go parallel only above this many elements, where it pays.
constexpr int64_t kParallelGrain = 1 << 15;

// f(begin, end) over [0, n) in spans of kSpan elements, in parallel above kParallelGrain.
constexpr int64_t kSpan = 1 << 13;
template <class F>
void parallel_spans(int64_t n, F&& f) {
  const int64_t spans = (n + kSpan - 1) / kSpan;
#pragma omp parallel for schedule(static) if (n > kParallelGrain)
  for (int64_t s = 0; s < spans; ++s) f(s * kSpan, s + 1 < spans ? (s + 1) * kSpan : n);
}

}  // namespace fuselab::kernels::cpu
