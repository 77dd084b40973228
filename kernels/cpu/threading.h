// The number of CPU threads FuseLab's kernels and OpenBLAS use: FUSELAB_NUM_THREADS, or all cores.
//
// The threads wait passively (OMP_WAIT_POLICY=passive, set at startup unless the environment
// names OMP_WAIT_POLICY or GOMP_SPINCOUNT): a thread that reaches a barrier first sleeps in the
// kernel instead of spinning. libgomp's default spins up to 300,000 pauses (milliseconds) first;
// on a shared machine a thread that lost its core to another process then holds up its team while
// the waiter burns the time slice it could have given back: with other tests running, the fused
// mlp_block at 2 threads took 2-2.7x its 1-thread time (bench/RESULTS.md), passive 0.5x. Passive
// waits cost about 3% on an idle machine. Loops keep static schedules (OpenBLAS splits its GEMMs
// statically anyway, and they are most of the time), and the thread count stays every core:
// under contention 2 passive threads run about as fast as 1.
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
