// cuBLASLt is column-major; a row-major matrix is its transpose in column-major. So
//
//   C = op(A) op(B)  (row-major)   <=>   C^T = op(B)^T op(A)^T  (column-major)
//
// and one column-major call with B in the first slot and A in the second computes C, with no
// copies: B as stored is column-major [cols of B, rows of B] with leading dimension ldb.
#include "kernels/cuda/gemm.h"

#include <cublasLt.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"

namespace fuselab::kernels::cuda {
namespace {

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed: " + cublasLtGetStatusString(status));
  }
}

bool tf32_from_environment() {
  const char* value = std::getenv("FUSELAB_ALLOW_TF32");
  return value != nullptr && std::string(value) == "1";
}
std::atomic<bool> tf32{tf32_from_environment()};

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

template <class T> struct Types;
template <> struct Types<float> {
  static constexpr cudaDataType_t data = CUDA_R_32F;
  static cublasComputeType_t compute() { return tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F; }
};
template <> struct Types<double> {
  static constexpr cudaDataType_t data = CUDA_R_64F;
  static cublasComputeType_t compute() { return CUBLAS_COMPUTE_64F; }
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

// Everything the algorithm choice depends on.
using GemmKey = std::tuple<int, int, int, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, uint32_t,
                           uint32_t, uint32_t>;

// cuBLASLt's best algorithm for one GEMM shape, asked once per key and cached for the process.
// The preference states the workspace and the operands' real alignment.
cublasLtMatmulAlgo_t algorithm_for(const GemmKey& key, const DeviceGemmState& state, MatmulDescriptors& d,
                                   uint32_t align_first, uint32_t align_second, uint32_t align_out) {
  static std::mutex mutex;
  static auto* cache = new std::map<GemmKey, cublasLtMatmulAlgo_t>();
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
  if (found == 0) throw std::runtime_error("cublasLtMatmulAlgoGetHeuristic found no algorithm for this GEMM");
  return (*cache)[key] = heuristic.algo;
}

}  // namespace

void set_allow_tf32(bool allow) { tf32 = allow; }
bool allow_tf32() { return tf32; }

template <class T>
void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc, int device) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: C = beta * C
    if (ldc != n) throw std::runtime_error("gemm with k = 0 needs ldc == n");
    return scale(c, beta, c, m * n, device);
  }
  use_device(device);
  DeviceGemmState& state = state_of(device);
  const cudaDataType_t type = Types<T>::data;
  MatmulDescriptors d;
  check_cublas(cublasLtMatmulDescCreate(&d.op, Types<T>::compute(), type), "cublasLtMatmulDescCreate");
  // Column-major: first = B (n x k after its op), second = A (k x m after its op).
  const cublasOperation_t op_first = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_cublas(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first)),
               "cublasLtMatmulDescSetAttribute(TRANSA)");
  check_cublas(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof(op_second)),
               "cublasLtMatmulDescSetAttribute(TRANSB)");
  // Stored shapes, column-major: B is [n, k] (or [k, n] transposed), A is [k, m] (or [m, k]).
  check_cublas(cublasLtMatrixLayoutCreate(&d.first, type, transpose_b ? k : n, transpose_b ? n : k, ldb),
               "cublasLtMatrixLayoutCreate(B)");
  check_cublas(cublasLtMatrixLayoutCreate(&d.second, type, transpose_a ? m : k, transpose_a ? k : m, lda),
               "cublasLtMatrixLayoutCreate(A)");
  check_cublas(cublasLtMatrixLayoutCreate(&d.out, type, n, m, ldc), "cublasLtMatrixLayoutCreate(C)");

  const uint32_t align_first = alignment_of(b), align_second = alignment_of(a), align_out = alignment_of(c);
  const GemmKey key{device, int(type), int(Types<T>::compute()), transpose_a, transpose_b, m, n, k, lda, ldb, ldc,
                    align_first, align_second, align_out};
  const cublasLtMatmulAlgo_t algo = algorithm_for(key, state, d, align_first, align_second, align_out);
  check_cublas(cublasLtMatmul(state.handle, d.op, &alpha, b, d.first, a, d.second, &beta, c, d.out, c, d.out,
                              &algo, state.workspace, kWorkspaceBytes, /*stream=*/0),
               "cublasLtMatmul");
}

FUSELAB_CUDA_GEMM_INSTANTIATE(float)
FUSELAB_CUDA_GEMM_INSTANTIATE(double)

}  // namespace fuselab::kernels::cuda
