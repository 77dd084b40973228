// The number of CPU threads FuseLab's kernels and OpenBLAS use: FUSELAB_NUM_THREADS, or all cores,
// read on the first kernel call (runtime/settings.h), or what set_num_threads() last set.
//
// How the threads wait is the program's choice, not the library's: libgomp's default spins up to
// 300,000 pauses at a barrier before it sleeps, and on a shared machine a thread that lost its core
// to another process then holds up its team while the waiter burns the time slice it could have
// given back (with other tests running, the fused mlp_block at 2 threads took 2-2.7x its 1-thread
// time; bench/RESULTS.md). A program chooses passive waits with OMP_WAIT_POLICY=passive in its
// environment, or by calling fuselab::use_passive_waits(argc, argv) first thing in main
// (runtime/runtime.h), as the examples do. Loops keep static schedules (OpenBLAS splits its GEMMs
// statically anyway, and they are most of the time).
#pragma once

#include <cstdint>

namespace fuselab::kernels::cpu {

int num_threads();
// Gives the calling thread's OpenMP regions num_threads() threads (cheap once applied): launch()
// calls it before every CPU kernel.
void apply_num_threads();
// Threads for OpenMP and, when it is loaded, OpenBLAS; threads >= 1 (runtime/runtime.h checks).
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
