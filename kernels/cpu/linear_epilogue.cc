// The CPU bodies of kernels/linear_epilogue.h: the GEMM (OpenBLAS), then one parallel pass.
// (Row panels sized to stay in L2, each GEMM'd and finished at once, were tried first: OpenBLAS
// repacks W for every panel and parallelizes small GEMMs badly, so on 2 threads the panelled
// fused op was slower than unfused. See bench/RESULTS.md.)
#include "kernels/linear_epilogue.h"

#include <vector>

#include "kernels/cpu/activation_spans.h"
#include "kernels/cpu/bias_activation.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/partial_sums.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels {
using namespace cpu;

template <class T>
void LinearBiasActivationForward<T>::cpu(KernelContext&) const {
  gemm<T>(false, true, rows, out, in, T(1), x, in, w, in, T(0), y, out);
  if (act == Activation::None) {
    add_bias<T>(b, y, rows, out);
  } else {
    bias_activation_forward<T>(act, b, y, pre, rows, out);
  }
  if (path) *path = EpiloguePath::OwnPass;
}

template <class T>
void LinearBiasAddForward<T>::cpu(KernelContext&) const {
  gemm<T>(false, true, rows, out, in, T(1), x, in, w, in, T(0), y, out);
#pragma omp parallel for schedule(static) if (rows * out > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    T* yr = y + r * out;
    const T* rr = residual + r * out;
    if (b) {
#pragma omp simd
      for (int64_t c = 0; c < out; ++c) yr[c] = T(compute_t<T>(yr[c]) + compute_t<T>(b[c]) + compute_t<T>(rr[c]));
    } else {
#pragma omp simd
      for (int64_t c = 0; c < out; ++c) yr[c] = T(compute_t<T>(yr[c]) + compute_t<T>(rr[c]));
    }
  }
  if (path) *path = EpiloguePath::OwnPass;
}

template <class T>
void ActivationBiasBackward<T>::cpu(KernelContext&) const {
  with_activation(act, [&](auto math) {
    // Rows without dbias need no partials; with it, each thread sums its rows' dpre privately.
    using C = compute_t<T>;
    std::vector<T> unused;
    parallel_partial_sums<C>(rows, dbias ? cols : 0, rows * cols > kParallelGrain, dbias ? dbias : unused.data(),
                             false, [&](int64_t r, C* partial) {
                               const T* prer = pre + r * cols;
                               const T* dyr = dy + r * cols;
                               T* dprer = dpre + r * cols;
                               activation_grad_span<T, decltype(math)>(prer, dyr, dprer, cols);
                               if (dbias) {
#pragma omp simd
                                 for (int64_t c = 0; c < cols; ++c) partial[c] += C(dprer[c]);
                               }
                             });
  });
}

FUSELAB_LINEAR_EPILOGUE_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels
