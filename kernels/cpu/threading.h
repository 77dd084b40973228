// The number of CPU threads FuseLab's kernels and OpenBLAS use: FUSELAB_NUM_THREADS, or all cores.
#pragma once

#include <cstdint>

namespace fuselab::kernels::cpu {

int num_threads();
void set_num_threads(int threads);

// Elementwise and row kernels go parallel only above this many elements, where it pays.
constexpr int64_t kParallelGrain = 1 << 15;

}  // namespace fuselab::kernels::cpu
