// cuBLASLt is column-major; a row-major matrix is its transpose in column-major. So
//
//   C = op(A) op(B)  (row-major)   <=>   C^T = op(B)^T op(A)^T  (column-major)
//
// and one column-major call with B in the first slot and A in the second computes C, with no
// copies: B as stored is column-major [cols of B, rows of B] with leading dimension ldb.
#include "kernels/cuda/gemm.h"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_api.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/grouped_gemm_plan.h"

namespace fuselab::kernels::cuda {
namespace {

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed: " + cublasLtGetStatusString(status));
  }
}

// FUSELAB_ALLOW_TF32, read on the first GEMM; set_allow_tf32 overrides it.
std::atomic<bool>& tf32() {
  static std::atomic<bool> allowed{runtime::settings().allow_tf32};
  return allowed;
}

// One cuBLASLt handle and workspace per device, made on first use and kept for the process.
struct DeviceGemmState {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
};
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

DeviceGemmState& state_of(int device) {
  static std::mutex mutex;
  static auto* states = new std::vector<DeviceGemmState>();
  std::lock_guard<std::mutex> lock(mutex);
  if (states->size() <= size_t(device)) states->resize(size_t(device) + 1);
  DeviceGemmState& state = (*states)[size_t(device)];
  if (state.handle == nullptr) {
    check_cublas(cublasLtCreate(&state.handle), "cublasLtCreate");
    check_cuda(cudaMalloc(&state.workspace, kWorkspaceBytes), "cudaMalloc(cuBLASLt workspace)");
  }
  return state;
}

// One cuBLAS handle per device, for the grouped calls (cuBLASLt has none), made on the first of
// them: a program that never groups GEMMs never opens cuBLAS.
cublasHandle_t blas_handle(int device) {
  static std::mutex mutex;
  static auto* handles = new std::vector<cublasHandle_t>();
  std::lock_guard<std::mutex> lock(mutex);
  if (handles->size() <= size_t(device)) handles->resize(size_t(device) + 1, nullptr);
  cublasHandle_t& handle = (*handles)[size_t(device)];
  if (handle == nullptr) check_cublas(cublasCreate(&handle), "cublasCreate");
  return handle;
}

template <class T> struct Types;
template <> struct Types<float> {
  static constexpr cudaDataType_t data = CUDA_R_32F, scale = CUDA_R_32F;
  static cublasComputeType_t compute() { return tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F; }
};
template <> struct Types<double> {
  static constexpr cudaDataType_t data = CUDA_R_64F, scale = CUDA_R_64F;
  static cublasComputeType_t compute() { return CUBLAS_COMPUTE_64F; }
};
template <> struct Types<bfloat16> {  // bfloat16 operands, float32 accumulation and scalars
  static constexpr cudaDataType_t data = CUDA_R_16BF, scale = CUDA_R_32F;
  static cublasComputeType_t compute() { return CUBLAS_COMPUTE_32F; }
};

// Owns the descriptors of one call.
struct MatmulDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  ~MatmulDescriptors() {
    if (preference) cublasLtMatmulPreferenceDestroy(preference);
    if (out) cublasLtMatrixLayoutDestroy(out);
    if (second) cublasLtMatrixLayoutDestroy(second);
    if (first) cublasLtMatrixLayoutDestroy(first);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// The largest power of two (up to 256) that divides the address: tensor views start anywhere,
// and cuBLASLt assumes 256-byte alignment unless told otherwise.
uint32_t alignment_of(const void* ptr) {
  uint32_t alignment = 256;
  while (alignment > 1 && reinterpret_cast<uintptr_t>(ptr) % alignment != 0) alignment /= 2;
  return alignment;
}

void set_preference(cublasLtMatmulPreference_t preference, cublasLtMatmulPreferenceAttributes_t attribute,
                    const void* value, size_t size, const char* what) {
  check_cublas(cublasLtMatmulPreferenceSetAttribute(preference, attribute, value, size), what);
}

cublasLtEpilogue_t cublaslt_epilogue(GemmEpilogue epilogue) {
  switch (epilogue) {
    case GemmEpilogue::None: return CUBLASLT_EPILOGUE_DEFAULT;
    case GemmEpilogue::Bias: return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::BiasReLU: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case GemmEpilogue::BiasGELUAux: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// One GEMM as gemm_with_epilogue states it.
template <class T>
struct GemmCall {
  bool transpose_a, transpose_b;
  int64_t m, n, k;
  compute_t<T> alpha;
  const T* a;
  int64_t lda;
  const T* b;
  int64_t ldb;
  compute_t<T> beta;
  const T* c;
  T* d;
  int64_t ldd;
  GemmEpilogue epilogue;
  const T* bias;
  T* aux;
};

// Everything the algorithm choice depends on.
using GemmKey = std::tuple<int, int, int, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, uint32_t,
                           uint32_t, uint32_t, int>;

// cuBLASLt's best algorithm for one GEMM shape and epilogue, asked once per key and cached (found =
// false when it has none). The preference states the workspace and the operands' real alignment.
// The map is bounded, as the CPU's primitives are (kernels/cpu/onednn_runtime.h): a program with
// endlessly new shapes (attention over a growing KV cache) starts it over instead of growing.
struct CachedAlgorithm {
  bool found;
  cublasLtMatmulAlgo_t algo;
};
CachedAlgorithm algorithm_for(const GemmKey& key, const DeviceGemmState& state, MatmulDescriptors& d,
                              uint32_t align_first, uint32_t align_second, uint32_t align_out) {
  static std::mutex mutex;
  static auto* cache = new std::map<GemmKey, CachedAlgorithm>();
  std::lock_guard<std::mutex> lock(mutex);
  const auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  check_cublas(cublasLtMatmulPreferenceCreate(&d.preference), "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace = kWorkspaceBytes;
  set_preference(d.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace),
                 "cublasLtMatmulPreferenceSetAttribute(workspace)");
  set_preference(d.preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_first, sizeof(uint32_t),
                 "cublasLtMatmulPreferenceSetAttribute(alignment A)");
  set_preference(d.preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_second, sizeof(uint32_t),
                 "cublasLtMatmulPreferenceSetAttribute(alignment B)");
  set_preference(d.preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_out, sizeof(uint32_t),
                 "cublasLtMatmulPreferenceSetAttribute(alignment C)");
  set_preference(d.preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_out, sizeof(uint32_t),
                 "cublasLtMatmulPreferenceSetAttribute(alignment D)");
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  check_cublas(cublasLtMatmulAlgoGetHeuristic(state.handle, d.op, d.first, d.second, d.out, d.out, d.preference, 1,
                                              &heuristic, &found),
               "cublasLtMatmulAlgoGetHeuristic");
  constexpr size_t kCapacity = 4096;
  if (cache->size() >= kCapacity) cache->clear();
  return (*cache)[key] = {found > 0, heuristic.algo};
}

template <class Value>
void set_matmul_attribute(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attribute, const Value& value,
                          const char* what) {
  check_cublas(cublasLtMatmulDescSetAttribute(op, attribute, &value, sizeof(value)), what);
}

// Runs one GEMM; false when cuBLASLt has no algorithm for it.
template <class T>
bool run_gemm(const GemmCall<T>& call, int device) {
  use_device(device);
  DeviceGemmState& state = state_of(device);
  const cudaDataType_t type = Types<T>::data;
  MatmulDescriptors d;
  check_cublas(cublasLtMatmulDescCreate(&d.op, Types<T>::compute(), Types<T>::scale), "cublasLtMatmulDescCreate");
  // Column-major: first = B (n x k after its op), second = A (k x m after its op).
  const cublasOperation_t op_first = call.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = call.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_matmul_attribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, op_first, "cublasLtMatmulDescSetAttribute(TRANSA)");
  set_matmul_attribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, op_second, "cublasLtMatmulDescSetAttribute(TRANSB)");
  if (call.epilogue != GemmEpilogue::None) {
    // The bias runs along column-major D's rows, which are the row-major output's columns (n).
    set_matmul_attribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, cublaslt_epilogue(call.epilogue),
                         "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    set_matmul_attribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(call.bias),
                         "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  }
  if (call.epilogue == GemmEpilogue::BiasGELUAux) {
    set_matmul_attribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, static_cast<void*>(call.aux),
                         "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)");
    set_matmul_attribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, call.ldd,
                         "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)");
  }
  // Stored shapes, column-major: B is [n, k] (or [k, n] transposed), A is [k, m] (or [m, k]).
  const int64_t m = call.m, n = call.n, k = call.k;
  check_cublas(cublasLtMatrixLayoutCreate(&d.first, type, call.transpose_b ? k : n, call.transpose_b ? n : k, call.ldb),
               "cublasLtMatrixLayoutCreate(B)");
  check_cublas(cublasLtMatrixLayoutCreate(&d.second, type, call.transpose_a ? m : k, call.transpose_a ? k : m, call.lda),
               "cublasLtMatrixLayoutCreate(A)");
  check_cublas(cublasLtMatrixLayoutCreate(&d.out, type, n, m, call.ldd), "cublasLtMatrixLayoutCreate(C, D)");

  const T* c = call.c ? call.c : call.d;
  const uint32_t align_first = alignment_of(call.b), align_second = alignment_of(call.a);
  const uint32_t align_out = std::min(alignment_of(c), alignment_of(call.d));
  const GemmKey key{device, int(type), int(Types<T>::compute()), call.transpose_a, call.transpose_b, m, n, k,
                    call.lda, call.ldb, call.ldd, align_first, align_second, align_out, int(call.epilogue)};
  const CachedAlgorithm algo = algorithm_for(key, state, d, align_first, align_second, align_out);
  if (!algo.found) return false;
  check_cublas(cublasLtMatmul(state.handle, d.op, &call.alpha, call.b, d.first, call.a, d.second, &call.beta, c, d.out,
                              call.d, d.out, &algo.algo, state.workspace, kWorkspaceBytes, /*stream=*/0),
               "cublasLtMatmul");
  return true;
}

}  // namespace

void set_allow_tf32(bool allow) { tf32() = allow; }
bool allow_tf32() { return tf32(); }

template <class T>
void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, compute_t<T> alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, compute_t<T> beta, T* c, int64_t ldc, int device) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: C = beta * C, where beta = 0 does not read C (it may hold NaNs)
    if (ldc != n) throw std::runtime_error("gemm with k = 0 needs ldc == n");
    if (beta == compute_t<T>(0)) return fill_bytes(c, 0, size_t(m * n) * sizeof(T), device);
    return scale(c, beta, c, m * n, device);
  }
  const GemmCall<T> call{transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, c, ldc,
                         GemmEpilogue::None, nullptr, nullptr};
  if (!run_gemm(call, device)) {
    throw std::runtime_error("cublasLtMatmulAlgoGetHeuristic found no algorithm for this GEMM");
  }
}

template <class T>
bool gemm_with_epilogue(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                        const T* b, int64_t ldb, compute_t<T> beta, const T* c, T* d, int64_t ldd,
                        GemmEpilogue epilogue, const T* bias, T* aux, int device) {
  if (m == 0 || n == 0 || k == 0) return false;  // nothing for cuBLASLt to do: the caller's kernels handle it
  // Conservative: 16-byte aligned epilogue vectors (Marian found 8 failing on A100) and an aux
  // stride that is a multiple of 8 elements, as cuBLASLt's docs ask of aux buffers.
  if (bias && alignment_of(bias) < 16) return false;
  if (epilogue == GemmEpilogue::BiasGELUAux && (alignment_of(aux) < 16 || ldd % 8 != 0)) return false;
  const GemmCall<T> call{transpose_a, transpose_b, m, n, k, compute_t<T>(1), a, lda, b, ldb, beta, c, d, ldd,
                         epilogue, bias, aux};
  return run_gemm(call, device);
}

template <class T>
void grouped_gemm(bool transpose_a, bool transpose_b, const std::vector<GemmProblem<T>>& problems, int64_t lda,
                  int64_t ldb, compute_t<T> beta, int64_t ldc, KernelContext& ctx) {
  // cuBLAS asks operands of bfloat16 and of TF32 math in grouped calls to be aligned (16 bytes
  // always suffices): products that are not go one gemm() at a time.
  const bool strict = std::is_same_v<T, bfloat16> || (std::is_same_v<T, float> && tf32());
  if (strict && !std::all_of(problems.begin(), problems.end(), [](const GemmProblem<T>& p) {
        return alignment_of(p.a) >= 16 && alignment_of(p.b) >= 16 && alignment_of(p.c) >= 16;
      })) {
    for (const GemmProblem<T>& p : problems) {
      gemm<T>(transpose_a, transpose_b, p.m, p.n, p.k, 1, p.a, lda, p.b, ldb, beta, p.c, ldc, ctx.device);
    }
    return;
  }
  const GroupedGemmPlan<T> plan = plan_grouped_gemm(problems);
  run_empty_sums(plan, transpose_a, transpose_b, lda, ldb, beta, ldc, ctx.device);
  if (plan.problems() == 0) return;
  const void** pointers = ctx.scratch<const void*>(int64_t(plan.pointers.size()));
  use_device(ctx.device);
  check_cuda(cudaMemcpyAsync(pointers, plan.pointers.data(), plan.pointers.size() * sizeof(void*),
                             cudaMemcpyHostToDevice, /*stream=*/0),
             "cudaMemcpyAsync(grouped GEMM pointers)");
  const size_t groups = plan.group_size.size();
  const std::vector<cublasOperation_t> op_first(groups, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N);
  const std::vector<cublasOperation_t> op_second(groups, transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N);
  const std::vector<int64_t> ld_first(groups, ldb), ld_second(groups, lda), ld_out(groups, ldc);
  const std::vector<compute_t<T>> alphas(groups, compute_t<T>(1)), betas(groups, beta);
  const cudaDataType_t type = Types<T>::data;
  const int64_t total = plan.problems();
  check_cublas(cublasGemmGroupedBatchedEx_64(blas_handle(ctx.device), op_first.data(), op_second.data(), plan.m.data(),
                                             plan.n.data(), plan.k.data(), alphas.data(), pointers, type,
                                             ld_first.data(), pointers + total, type, ld_second.data(), betas.data(),
                                             const_cast<void* const*>(pointers + 2 * total), type, ld_out.data(),
                                             int64_t(groups), plan.group_size.data(), Types<T>::compute()),
               "cublasGemmGroupedBatchedEx");
}

FUSELAB_CUDA_GEMM_INSTANTIATE(float)
FUSELAB_CUDA_GEMM_INSTANTIATE(double)
FUSELAB_CUDA_GEMM_INSTANTIATE(bfloat16)

}  // namespace fuselab::kernels::cuda
