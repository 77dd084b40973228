// Deterministic parallel reductions. Each thread takes a fixed (static) block of the rows and
// accumulates into its own partial; the partials are then added in thread order. For a given
// thread count the result is the same bits on every run, unlike `omp critical` or `reduction`,
// whose combining order depends on which thread finishes first.
#pragma once

#include <omp.h>

#include <cstdint>
#include <vector>

namespace fuselab::kernels::cpu {

// Calls row(r, partial) for every r in [0, rows), where partial points to `width` zeros of type Acc
// owned by the calling thread, then sets total[j] (+)= the sum of the partials in thread order,
// rounded to Out once at the end.
template <class Acc, class Out, class Row>
void parallel_partial_sums(int64_t rows, int64_t width, bool parallel, Out* total, bool accumulate, Row&& row) {
  const int threads = parallel ? omp_get_max_threads() : 1;
  std::vector<Acc> partials(size_t(threads) * size_t(width), Acc(0));
#pragma omp parallel num_threads(threads) if (parallel)
  {
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    const int64_t begin = rows * t / n, end = rows * (t + 1) / n;  // fixed blocks of rows
    Acc* partial = partials.data() + size_t(t) * size_t(width);
    for (int64_t r = begin; r < end; ++r) row(r, partial);
  }
  for (int64_t j = 0; j < width; ++j) {
    Acc sum = accumulate ? Acc(total[j]) : Acc(0);
    for (int t = 0; t < threads; ++t) sum += partials[size_t(t) * size_t(width) + size_t(j)];
    total[j] = Out(sum);
  }
}

}  // namespace fuselab::kernels::cpu
