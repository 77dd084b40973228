// The CPU bodies of kernels/linear_epilogue.h. With oneDNN (kernels/cpu/gemm.h) the epilogue runs
// inside the GEMM, except that a pre-activation kept for backward takes one pass of its own:
// the GEMM writes pre = x W^T + b, then y = act(pre). With OpenBLAS, the GEMM, then one parallel
// pass for everything else. (Row panels sized to stay in L2, each GEMM'd by OpenBLAS and finished
// at once, were tried first: OpenBLAS repacks W for every panel and parallelizes small GEMMs
// badly, so on 2 threads the panelled fused op was slower than unfused. See bench/RESULTS.md.)
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
  const bool keep_pre = pre && act != Activation::None;
  if (!keep_pre) {
    const bool in_gemm = gemm_with_epilogue<T>(false, true, rows, out, in, x, in, w, in, {b, nullptr, act}, y);
    if (path) *path = in_gemm ? EpiloguePath::InGemm : EpiloguePath::OwnPass;
  } else if (cpu_gemm<T>() == CpuGemm::Onednn) {
    gemm_with_epilogue<T>(false, true, rows, out, in, x, in, w, in, {b}, pre);
    with_activation(act, [&](auto math) {
      parallel_spans(rows * out, [&](int64_t begin, int64_t end) {
        activation_span<T, decltype(math)>(pre + begin, y + begin, end - begin);
      });
    });
    if (path) *path = EpiloguePath::OwnPass;
  } else {
    gemm<T>(false, true, rows, out, in, T(1), x, in, w, in, T(0), y, out);
    bias_activation_forward<T>(act, b, y, pre, rows, out);
    if (path) *path = EpiloguePath::OwnPass;
  }
}

template <class T>
void LinearBiasAddForward<T>::cpu(KernelContext&) const {
  const bool in_gemm = gemm_with_epilogue<T>(false, true, rows, out, in, x, in, w, in, {b, residual}, y);
  if (path) *path = in_gemm ? EpiloguePath::InGemm : EpiloguePath::OwnPass;
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
