// The kernels/cuda API and every kernel's cuda() body for builds without the CUDA toolkit
// (--config=cpu): no devices, and every call that would need one throws. No CUDA tensor can exist
// in such a build, so the kernels below are never reached through the tensor layer.
#include <stdexcept>
#include <string>

#include "kernels/attention.h"
#include "kernels/channel_bias.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/cast.h"
#include "kernels/cuda/device_api.h"
#include "kernels/cuda/gemm.h"
#include "kernels/dropout.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/flash_attention.h"
#include "kernels/grouped_mlp.h"
#include "kernels/linear_epilogue.h"
#include "kernels/matmul.h"
#include "kernels/moe_combine.h"
#include "kernels/norms.h"
#include "kernels/optimizer_steps.h"
#include "kernels/rotary.h"
#include "kernels/router.h"
#include "kernels/softmax.h"
#include "kernels/gated_linear_unit.h"

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
IndexFault* index_fault_record(int, const std::string&) { unavailable("cudaHostAlloc"); }
void fill_bytes(void*, unsigned char, size_t, int) { unavailable("cudaMemset"); }

template <class From, class To>
void cast(const From*, To*, int64_t, int) {
  unavailable("cast_kernel");
}
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
void grouped_gemm(bool, bool, const std::vector<GemmProblem<T>>&, int64_t, int64_t, compute_t<T>, int64_t,
                  KernelContext&) {
  unavailable("cublasGemmGroupedBatchedEx");
}
void set_allow_tf32(bool) {}
bool allow_tf32() { return false; }

FUSELAB_CUDA_GEMM_INSTANTIATE(float)
FUSELAB_CUDA_GEMM_INSTANTIATE(double)
FUSELAB_CUDA_GEMM_INSTANTIATE(bfloat16)
FUSELAB_CUDA_CAST_INSTANTIATE

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {

using cuda::unavailable;

FUSELAB_ATTENTION_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_CHANNEL_BIAS_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_CONV2D_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_DROPOUT_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_ELEMENTWISE_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_EMBEDDING_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_FLASH_ATTENTION_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_GROUPED_MLP_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_LINEAR_EPILOGUE_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_MATMUL_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_MOE_COMBINE_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_NORM_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_OPTIMIZER_STEP_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_ROTARY_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_ROUTER_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_SOFTMAX_KERNELS(FUSELAB_CUDA_STUB)
FUSELAB_GATED_LINEAR_UNIT_KERNELS(FUSELAB_CUDA_STUB)

}  // namespace fuselab::kernels
