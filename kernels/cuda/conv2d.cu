// cuDNN's legacy convolution API (cudnn_cnn.h): deprecated in cuDNN 9 in favour of the graph
// API, but complete for plain NCHW convolutions and still the shortest correct code for them.
#include "kernels/conv2d.h"
#include "kernels/cuda/channel_bias.h"

#include <cudnn.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm.h"

namespace fuselab::kernels::cuda {
namespace {

void check_cudnn(cudnnStatus_t status, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed: " + cudnnGetErrorString(status));
  }
}

// One cuDNN handle and one workspace per device, made on first use; the workspace grows to the
// largest size an algorithm asked for.
struct DeviceConvState {
  cudnnHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

DeviceConvState& state_of(int device) {
  static std::mutex mutex;
  static auto* states = new std::vector<DeviceConvState>();
  std::lock_guard<std::mutex> lock(mutex);
  if (states->size() <= size_t(device)) states->resize(size_t(device) + 1);
  DeviceConvState& state = (*states)[size_t(device)];
  if (state.handle == nullptr) check_cudnn(cudnnCreate(&state.handle), "cudnnCreate");
  return state;
}

void* workspace_of(DeviceConvState& state, size_t bytes) {
  if (bytes > state.workspace_bytes) {
    if (state.workspace) check_cuda(cudaFree(state.workspace), "cudaFree(cuDNN workspace)");  // synchronizes
    state.workspace = nullptr;
    check_cuda(cudaMalloc(&state.workspace, bytes), "cudaMalloc(cuDNN workspace)");
    state.workspace_bytes = bytes;
  }
  return state.workspace;
}

// Algorithms needing more workspace than this are passed over.
constexpr size_t kMaxWorkspaceBytes = size_t(1) << 30;

template <class T> struct CudnnType;
template <> struct CudnnType<float> { static constexpr cudnnDataType_t value = CUDNN_DATA_FLOAT; };
template <> struct CudnnType<double> { static constexpr cudnnDataType_t value = CUDNN_DATA_DOUBLE; };

// float32 in full precision unless TF32 is allowed; double has no tensor-core math to restrict.
template <class T>
cudnnMathType_t math_type() {
  return std::is_same<T, float>::value && !allow_tf32() ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
}

// The descriptors of one convolution, destroyed with it.
struct ConvDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  ConvDescriptors(const Conv2dGeometry& g, cudnnDataType_t type, cudnnMathType_t math) {
    check_cudnn(cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnCreateTensorDescriptor(&bias), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
    check_cudnn(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
    check_cudnn(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, type, int(g.batch), int(g.in_channels),
                                           int(g.height), int(g.width)),
                "cudnnSetTensor4dDescriptor(x)");
    check_cudnn(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, type, int(g.batch), int(g.out_channels),
                                           int(g.out_h()), int(g.out_w())),
                "cudnnSetTensor4dDescriptor(y)");
    // The bias is [1, K, 1, 1]: cuDNN broadcasts it over n, h and w.
    check_cudnn(cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW, type, 1, int(g.out_channels), 1, 1),
                "cudnnSetTensor4dDescriptor(bias)");
    check_cudnn(cudnnSetFilter4dDescriptor(w, type, CUDNN_TENSOR_NCHW, int(g.out_channels), int(g.in_channels),
                                           int(g.kernel_h), int(g.kernel_w)),
                "cudnnSetFilter4dDescriptor");
    check_cudnn(cudnnSetConvolution2dDescriptor(conv, int(g.padding), int(g.padding), int(g.stride), int(g.stride),
                                                1, 1, CUDNN_CROSS_CORRELATION, type),
                "cudnnSetConvolution2dDescriptor");
    check_cudnn(cudnnSetConvolutionMathType(conv, math), "cudnnSetConvolutionMathType");
  }
  ~ConvDescriptors() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(bias);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;
};

enum class Pass { Forward, BackwardData, BackwardFilter };

// The algorithm cuDNN's heuristics rank first among those that run in this math mode within
// kMaxWorkspaceBytes, and its workspace size; asked once per key, then cached.
struct Algorithm {
  int algo;
  size_t workspace_bytes;
  cudnnMathType_t math;  // cuDNN 7.4+ picks kernels by algorithm and math type together
};
using AlgorithmKey = std::tuple<int, int, int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                                int64_t, int64_t>;

// The first entry of cuDNN's ranked heuristic list (query fills up to `count` entries) that ran
// successfully, fits kMaxWorkspaceBytes and, under FMA math, uses FMA math (with FMA set on the
// descriptor cuDNN reports FMA for what it returns; PyTorch asserts the same).
template <class Perf, class Query>
Algorithm ask_heuristics(int count, cudnnMathType_t math, const char* pass, Query&& query) {
  std::vector<Perf> ranked(static_cast<size_t>(count));
  int returned = 0;
  query(count, &returned, ranked.data());
  for (int i = 0; i < returned; ++i) {
    const Perf& p = ranked[size_t(i)];
    const bool math_ok = math != CUDNN_FMA_MATH || p.mathType == CUDNN_FMA_MATH;
    if (p.status == CUDNN_STATUS_SUCCESS && p.memory <= kMaxWorkspaceBytes && math_ok) {
      return {int(p.algo), p.memory, p.mathType};
    }
  }
  throw std::runtime_error(std::string("cuDNN's heuristics offer no usable ") + pass +
                           " algorithm for this convolution");
}

Algorithm algorithm_for(Pass pass, const Conv2dGeometry& g, cudnnDataType_t type, cudnnMathType_t math, int device,
                        DeviceConvState& state, const ConvDescriptors& d) {
  static std::mutex mutex;
  static auto* cache = new std::map<AlgorithmKey, Algorithm>();
  const AlgorithmKey key{device, int(pass), int(type), int(math), g.batch, g.in_channels, g.height, g.width,
                         g.out_channels, g.kernel_h, g.kernel_w, g.stride, g.padding};
  std::lock_guard<std::mutex> lock(mutex);
  const auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  Algorithm chosen{};
  switch (pass) {
    case Pass::Forward:
      chosen = ask_heuristics<cudnnConvolutionFwdAlgoPerf_t>(
          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, math, "forward", [&](int count, int* returned, auto* ranked) {
            check_cudnn(
                cudnnGetConvolutionForwardAlgorithm_v7(state.handle, d.x, d.w, d.conv, d.y, count, returned, ranked),
                "cudnnGetConvolutionForwardAlgorithm_v7");
          });
      break;
    case Pass::BackwardData:
      chosen = ask_heuristics<cudnnConvolutionBwdDataAlgoPerf_t>(
          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, math, "backward-data", [&](int count, int* returned, auto* ranked) {
            check_cudnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(state.handle, d.w, d.y, d.conv, d.x, count, returned,
                                                                    ranked),
                        "cudnnGetConvolutionBackwardDataAlgorithm_v7");
          });
      break;
    case Pass::BackwardFilter:
      chosen = ask_heuristics<cudnnConvolutionBwdFilterAlgoPerf_t>(
          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, math, "backward-filter", [&](int count, int* returned, auto* ranked) {
            check_cudnn(cudnnGetConvolutionBackwardFilterAlgorithm_v7(state.handle, d.x, d.y, d.conv, d.w, count,
                                                                      returned, ranked),
                        "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
          });
      break;
  }
  return (*cache)[key] = chosen;
}

// Everything one call needs: descriptors, handle, algorithm and workspace.
template <class T>
struct ConvCall {
  DeviceConvState& state;
  ConvDescriptors d;
  Algorithm algorithm;
  void* workspace;

  ConvCall(Pass pass, const Conv2dGeometry& g, int device)
      : state((use_device(device), state_of(device))),
        d(g, CudnnType<T>::value, math_type<T>()),
        algorithm(algorithm_for(pass, g, CudnnType<T>::value, math_type<T>(), device, state, d)),
        workspace(workspace_of(state, algorithm.workspace_bytes)) {
    check_cudnn(cudnnSetConvolutionMathType(d.conv, algorithm.math), "cudnnSetConvolutionMathType");
  }
};

bool has_no_output(const Conv2dGeometry& g) { return g.batch == 0 || g.out_channels == 0 || g.out_plane() <= 0; }

}  // namespace

}  // namespace fuselab::kernels::cuda

namespace fuselab::kernels {
using namespace cuda;

template <class T>
void Conv2dForward<T>::cuda(KernelContext& ctx) const {
  if (has_no_output(g)) return;
  ConvCall<T> c(Pass::Forward, g, ctx.device);
  const T one = 1, zero = 0;
  check_cudnn(cudnnConvolutionForward(c.state.handle, &one, c.d.x, x, c.d.w, w, c.d.conv,
                                      cudnnConvolutionFwdAlgo_t(c.algorithm.algo), c.workspace,
                                      c.algorithm.workspace_bytes, &zero, c.d.y, y),
              "cudnnConvolutionForward");
}

template <class T>
void Conv2dBiasActivationForward<T>::cuda(KernelContext& ctx) const {
  if (has_no_output(g)) return;
  if (act != Activation::ReLU) {
    Conv2dForward<T>{g, x, w, y}.cuda(ctx);
    return channel_bias_activation_forward<T>(act, b, y, pre, g.batch, g.out_channels, g.out_plane(), ctx.device);
  }
  ConvCall<T> c(Pass::Forward, g, ctx.device);
  cudnnActivationDescriptor_t relu = nullptr;
  check_cudnn(cudnnCreateActivationDescriptor(&relu), "cudnnCreateActivationDescriptor");
  check_cudnn(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
              "cudnnSetActivationDescriptor");
  // y = relu(1 * conv(x, w) + 0 * z + b), with z = y (its old contents are multiplied by 0).
  const T one = 1, zero = 0;
  const cudnnStatus_t status = cudnnConvolutionBiasActivationForward(
      c.state.handle, &one, c.d.x, x, c.d.w, w, c.d.conv, cudnnConvolutionFwdAlgo_t(c.algorithm.algo), c.workspace,
      c.algorithm.workspace_bytes, &zero, c.d.y, y, c.d.bias, b, relu, c.d.y, y);
  cudnnDestroyActivationDescriptor(relu);
  check_cudnn(status, "cudnnConvolutionBiasActivationForward");
}

template <class T>
void Conv2dBackwardData<T>::cuda(KernelContext& ctx) const {
  if (g.batch == 0) return;
  ConvCall<T> c(Pass::BackwardData, g, ctx.device);
  const T one = 1, zero = 0;
  check_cudnn(cudnnConvolutionBackwardData(c.state.handle, &one, c.d.w, w, c.d.y, dy, c.d.conv,
                                           cudnnConvolutionBwdDataAlgo_t(c.algorithm.algo), c.workspace,
                                           c.algorithm.workspace_bytes, &zero, c.d.x, dx),
              "cudnnConvolutionBackwardData");
}

template <class T>
void Conv2dBackwardFilter<T>::cuda(KernelContext& ctx) const {
  ConvCall<T> c(Pass::BackwardFilter, g, ctx.device);
  const T one = 1, zero = 0;
  check_cudnn(cudnnConvolutionBackwardFilter(c.state.handle, &one, c.d.x, x, c.d.y, dy, c.d.conv,
                                             cudnnConvolutionBwdFilterAlgo_t(c.algorithm.algo), c.workspace,
                                             c.algorithm.workspace_bytes, &zero, c.d.w, dw),
              "cudnnConvolutionBackwardFilter");
}

FUSELAB_CONV2D_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels
