// The CUDA bodies of kernels/linear_epilogue.h: one cuBLASLt call with the epilogue where it has
// one, else the GEMM and one pass; the bias grad by the two-level column sums, in scratch.
#include "kernels/linear_epilogue.h"

#include <type_traits>

#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemm.h"

namespace fuselab::kernels::cuda {
namespace {

// pre = y + b; y = act(pre), in place over y; pre may be null. In compute_t<T>; with bfloat16 the
// activation reads pre rounded, as the backward will.
template <class T, class Math>
__global__ void bias_activation_kernel(const T* b, T* y, T* pre, int64_t n, int64_t cols) {
  using C = compute_t<T>;
  FUSELAB_GRID_STRIDE_LOOP(i, n) {
    const T value = T(C(y[i]) + C(b[i % cols]));
    if (pre) pre[i] = value;
    y[i] = T(Math::forward(C(value)));
  }
}

// y += (b) + residual
template <class T>
__global__ void bias_residual_kernel(const T* b, const T* residual, T* y, int64_t n, int64_t cols) {
  using C = compute_t<T>;
  FUSELAB_GRID_STRIDE_LOOP(i, n) y[i] = T(C(y[i]) + (b ? C(b[i % cols]) : C(0)) + C(residual[i]));
}

// value(r, c) = dpre[r, c] = dy[r, c] * act'(pre[r, c]), written as the column sums read it: every
// element is visited once, so dpre and the bias grad's partials come from one pass.
template <class T, class Math>
struct ActivationGradTerms {
  const T *pre, *dy;
  T* dpre;
  int64_t cols;
  __device__ compute_t<T> operator()(int64_t r, int64_t c) const {
    using C = compute_t<T>;
    const int64_t i = r * cols + c;
    dpre[i] = T(C(dy[i]) * Math::grad(C(pre[i])));
    return C(dpre[i]);
  }
};

// The epilogue cuBLASLt can apply itself to y = x W^T for this activation, or None. ReLU needs
// no aux output when the caller keeps none (pre null); GELU's aux is pre. cuBLASLt's GELU is
// used for float and bfloat16: float64 keeps the reference math of activation_math.h.
template <class T>
GemmEpilogue library_epilogue(Activation act, const T* pre) {
  if (act == Activation::None) return GemmEpilogue::Bias;
  if (act == Activation::ReLU && pre == nullptr) return GemmEpilogue::BiasReLU;
  if (act == Activation::GELU && pre != nullptr && !std::is_same<T, double>::value) return GemmEpilogue::BiasGELUAux;
  return GemmEpilogue::None;
}

}  // namespace

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void LinearBiasActivationForward<T>::cuda(KernelContext& ctx) const {
  const int device = ctx.device;
  EpiloguePath ignored;
  EpiloguePath& where = path ? *path : ignored;
  // One cuBLASLt call with the epilogue where it has one ...
  const GemmEpilogue epilogue = library_epilogue(act, pre);
  if (epilogue != GemmEpilogue::None &&
      gemm_with_epilogue<T>(false, true, rows, out, in, x, in, w, in, 0, nullptr, y, out, epilogue, b, pre, device)) {
    where = EpiloguePath::InGemm;
    return;
  }
  where = epilogue == GemmEpilogue::None ? EpiloguePath::OwnPass : EpiloguePath::FellBack;
  // ... otherwise the GEMM, then one pass for the bias and the activation.
  gemm<T>(false, true, rows, out, in, 1, x, in, w, in, 0, y, out, device);
  if (act == Activation::None) {
    return binary<T>(BinaryOp::Add, y, b, y, rows, out, Broadcast::Row, device);
  }
  const int64_t n = rows * out;
  if (n == 0) return;
  with_activation(act, [&](auto math) {
    bias_activation_kernel<T, decltype(math)><<<blocks_for(n), kThreads>>>(b, y, pre, n, out);
  });
  check_launch("bias_activation_kernel");
}

template <class T>
void LinearBiasAddForward<T>::cuda(KernelContext& ctx) const {
  const int device = ctx.device;
  EpiloguePath ignored;
  EpiloguePath& where = path ? *path : ignored;
  // y = x W^T + 1 * residual (+ b), one cuBLASLt call reading the residual as its C ...
  if (gemm_with_epilogue<T>(false, true, rows, out, in, x, in, w, in, 1, residual, y, out,
                            b ? GemmEpilogue::Bias : GemmEpilogue::None, b, nullptr, device)) {
    where = EpiloguePath::InGemm;
    return;
  }
  where = EpiloguePath::FellBack;
  // ... otherwise the GEMM, then one pass for the bias and the residual.
  gemm<T>(false, true, rows, out, in, 1, x, in, w, in, 0, y, out, device);
  const int64_t n = rows * out;
  if (n == 0) return;
  bias_residual_kernel<T><<<blocks_for(n), kThreads>>>(b, residual, y, n, out);
  check_launch("bias_residual_kernel");
}

template <class T>
void ActivationBiasBackward<T>::cuda(KernelContext& ctx) const {
  if (dbias == nullptr) return activation_backward<T>(act, pre, dy, dpre, rows * cols, ctx.device);
  use_device(ctx.device);
  compute_t<T>* scratch = ctx.scratch<compute_t<T>>(column_sums_scratch(rows, cols));
  with_activation(act, [&](auto math) {
    column_sums(ActivationGradTerms<T, decltype(math)>{pre, dy, dpre, cols}, rows, cols, dbias, scratch);
  });
}

FUSELAB_LINEAR_EPILOGUE_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels
