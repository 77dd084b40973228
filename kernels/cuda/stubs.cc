// The kernels/cuda API for builds without the CUDA toolkit (--config=cpu): no devices, and
// every call that would need one throws. No CUDA tensor can exist in such a build, so the
// kernels below are never reached through the tensor layer.
#include <stdexcept>
#include <string>

#include "kernels/cuda/cast.h"
#include "kernels/channel_bias.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/device_api.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/linear_epilogue.h"
#include "kernels/cuda/optimizer_steps.h"
#include "kernels/dropout.h"
#include "kernels/embedding.h"
#include "kernels/norms.h"
#include "kernels/softmax.h"
#include "kernels/swiglu.h"

namespace fuselab::kernels::cuda {

[[noreturn]] void unavailable(const char* call) {
  throw std::runtime_error(std::string(call) + ": FuseLab was built without CUDA (--config=cpu)");
}

bool compiled_with_cuda() { return false; }
int device_count() { return 0; }
void* device_malloc(size_t, int) { unavailable("cudaMalloc"); }
void device_free(void*, int) { unavailable("cudaFree"); }
void copy_host_to_device(void*, const void*, size_t, int) { unavailable("cudaMemcpy"); }
void copy_device_to_host(void*, const void*, size_t, int) { unavailable("cudaMemcpy"); }
void copy_device_to_device(void*, const void*, size_t, int) { unavailable("cudaMemcpy"); }
void synchronize(int) { unavailable("cudaDeviceSynchronize"); }
void fill_bytes(void*, unsigned char, size_t, int) { unavailable("cudaMemset"); }

template <class From, class To>
void cast(const From*, To*, int64_t, int) {
  unavailable("cast_kernel");
}
template <class T>
void binary(BinaryOp, const T*, const T*, T*, int64_t, int64_t, Broadcast, int) { unavailable("binary_kernel"); }
template <class T>
void expand(const T*, const StridedIndex&, T*, int64_t, int) { unavailable("expand_kernel"); }
template <class T>
void sum_broadcast(const T*, const StridedIndex&, const StridedIndex&, int64_t, T*, int64_t, int) {
  unavailable("sum_broadcast_kernel");
}
template <class T>
void scale(const T*, compute_t<T>, T*, int64_t, int) { unavailable("scale_kernel"); }
template <class T>
void axpy(compute_t<T>, const T*, T*, int64_t, int) { unavailable("axpy_kernel"); }
template <class T>
void activation_forward(Activation, const T*, T*, int64_t, int) { unavailable("activation_forward_kernel"); }
template <class T>
void activation_backward(Activation, const T*, const T*, T*, int64_t, int) { unavailable("activation_backward_kernel"); }
int64_t sum_rows_scratch(int64_t, int64_t) { return 0; }
template <class T>
void sum_rows(const T*, int64_t, int64_t, T*, compute_t<T>*, int) { unavailable("column_sums_kernel"); }
template <class T>
void gemm(bool, bool, int64_t, int64_t, int64_t, compute_t<T>, const T*, int64_t, const T*, int64_t, compute_t<T>, T*,
          int64_t, int) {
  unavailable("cublasLtMatmul");
}
template <class T>
bool gemm_with_epilogue(bool, bool, int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, compute_t<T>,
                        const T*, T*, int64_t, GemmEpilogue, const T*, T*, int) {
  unavailable("cublasLtMatmul");
}
template <class T>
void adamw_step(const std::vector<ParamBuffers<T>>&, const AdamWHyper&, int) { unavailable("multi_tensor_kernel"); }
template <class T>
void sgd_step(const std::vector<ParamBuffers<T>>&, const SGDHyper&, int) { unavailable("multi_tensor_kernel"); }
template <class T>
double sum_squares(const T*, int64_t, int) { unavailable("sum_squares_kernel"); }
template <class T>
EpiloguePath linear_bias_activation_forward(const T*, const T*, const T*, Activation, T*, T*, int64_t, int64_t,
                                            int64_t, int) {
  unavailable("bias_activation_kernel");
}
template <class T>
EpiloguePath linear_bias_add_forward(const T*, const T*, const T*, const T*, T*, int64_t, int64_t, int64_t, int) {
  unavailable("bias_residual_kernel");
}
int64_t activation_bias_backward_scratch(int64_t, int64_t) { return 0; }
template <class T>
void activation_bias_backward(Activation, const T*, const T*, T*, T*, compute_t<T>*, int64_t, int64_t, int) {
  unavailable("column_partials_kernel");
}
template <class T>
void transpose(const T*, T*, int64_t, int64_t, int64_t, int) { unavailable("transpose_kernel"); }
template <class T>
void sum_cols(const T*, int64_t, int64_t, T, T*, int) { unavailable("sum_cols_kernel"); }
template <class T>
void expand_cols(const T*, int64_t, int64_t, T, T*, int) { unavailable("expand_cols_kernel"); }
void set_allow_tf32(bool) {}
bool allow_tf32() { return false; }

#define INSTANTIATE(T)                        \
  FUSELAB_CUDA_ELEMENTWISE_INSTANTIATE(T)     \
  FUSELAB_CUDA_GEMM_INSTANTIATE(T)            \
  FUSELAB_CUDA_LINEAR_EPILOGUE_INSTANTIATE(T) \
  FUSELAB_CUDA_OPTIMIZER_STEPS_INSTANTIATE(T)
INSTANTIATE(float)
INSTANTIATE(double)
FUSELAB_CUDA_ELEMENTWISE_BF16_INSTANTIATE(bfloat16)
FUSELAB_CUDA_GEMM_INSTANTIATE(bfloat16)
FUSELAB_CUDA_LINEAR_EPILOGUE_INSTANTIATE(bfloat16)
FUSELAB_CUDA_SUM_SQUARES_BF16_INSTANTIATE
FUSELAB_CUDA_CAST_INSTANTIATE

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {

using cuda::unavailable;

FUSELAB_CHANNEL_BIAS_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_CONV2D_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_NORM_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_SOFTMAX_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_SWIGLU_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_DROPOUT_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_EMBEDDING_KERNELS(FUSELAB_CUDA_STUB)

}  // namespace fuselab::kernels
