// The groups of a grouped kernel (GroupedMatmul, GroupedMlp): runs of consecutive rows, group g
// holding sizes[g] rows (a host array).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/threading.h"

namespace fuselab::kernels::cpu {

// Where each group's rows start (and, last, the rows of all).
inline std::vector<int64_t> group_starts(const int64_t* sizes, int64_t groups) {
  std::vector<int64_t> start(size_t(groups) + 1, 0);
  for (int64_t g = 0; g < groups; ++g) start[size_t(g + 1)] = start[size_t(g)] + sizes[g];
  return start;
}

// Whether the groups run in parallel, one per thread: when at least as many have rows as there
// are threads (many small experts' GEMMs scale badly across threads one by one). Otherwise they
// run one after another, each on every thread.
inline bool groups_in_parallel(const int64_t* sizes, int64_t groups) {
  return std::count_if(sizes, sizes + groups, [](int64_t rows) { return rows > 0; }) >= num_threads();
}

// The threads a group loop runs on, for per-thread buffers.
inline int group_workers(const int64_t* sizes, int64_t groups) {
  return groups_in_parallel(sizes, groups) ? num_threads() : 1;
}

// f(g, worker) for every group, worker in [0, group_workers()). In parallel the largest groups
// start first, so that the last to finish is a small one (the longest-processing-time-first rule:
// a large expert started last would leave the other threads idle while it runs).
template <class F>
void for_each_group(const int64_t* sizes, int64_t groups, F&& f) {
  if (groups_in_parallel(sizes, groups)) {
    std::vector<int64_t> order(size_t(groups), 0);
    for (int64_t g = 0; g < groups; ++g) order[size_t(g)] = g;
    std::stable_sort(order.begin(), order.end(), [sizes](int64_t a, int64_t b) { return sizes[a] > sizes[b]; });
#pragma omp parallel for schedule(dynamic)
    for (int64_t i = 0; i < groups; ++i) f(order[size_t(i)], omp_get_thread_num());
  } else {
    for (int64_t g = 0; g < groups; ++g) f(g, 0);
  }
}

}  // namespace fuselab::kernels::cpu
