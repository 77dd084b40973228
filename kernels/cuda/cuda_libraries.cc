// cuBLASLt, cuBLAS (for its grouped GEMM alone) and cuDNN, opened on first use
// (runtime/shared_library.h), so that a program built with CUDA starts on a machine without them and
// needs them only at its first GEMM, grouped GEMM or convolution on a GPU. The CUDA runtime is
// linked statically (third_party/cuda/cuda.bzl) and opens the driver itself at the first CUDA call.
// A new cuBLASLt, cuBLAS or cuDNN call in kernels/cuda fails to link, naming the function: add its
// line.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>

#include <string>
#include <vector>

#include "runtime/shared_library.h"

namespace {

// The version the headers describe, from the loader's path, else from the toolkit FuseLab was
// built with.
std::vector<std::string> files(const std::string& name, const char* folder) {
  return {name, std::string(FUSELAB_CUDA_PATH) + "/" + folder + "/" + name};
}

const fuselab::runtime::SharedLibrary& cublaslt() {
  static const fuselab::runtime::SharedLibrary library(
      "cuBLASLt", files("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR), "lib64"),
      "the CUDA 13 toolkit's cuBLAS (its lib64/ on LD_LIBRARY_PATH, or pip's nvidia-cublas)");
  return library;
}

const fuselab::runtime::SharedLibrary& cublas() {
  static const fuselab::runtime::SharedLibrary library(
      "cuBLAS", files("libcublas.so." + std::to_string(CUBLAS_VER_MAJOR), "lib64"),
      "the CUDA 13 toolkit's cuBLAS (its lib64/ on LD_LIBRARY_PATH, or pip's nvidia-cublas)");
  return library;
}

const fuselab::runtime::SharedLibrary& cudnn() {
  static const fuselab::runtime::SharedLibrary library(
      "cuDNN", files("libcudnn.so." + std::to_string(CUDNN_MAJOR), "lib"),
      "cuDNN 9 for CUDA 13 (its lib/ on LD_LIBRARY_PATH, or pip's nvidia-cudnn-cu13)");
  return library;
}

}  // namespace

FUSELAB_FORWARD(cublaslt, cublasLtCreate);
FUSELAB_FORWARD(cublaslt, cublasLtGetStatusString);
FUSELAB_FORWARD(cublaslt, cublasLtMatmul);
FUSELAB_FORWARD(cublaslt, cublasLtMatmulAlgoGetHeuristic);
FUSELAB_FORWARD(cublaslt, cublasLtMatmulDescCreate);
FUSELAB_FORWARD(cublaslt, cublasLtMatmulDescDestroy);
FUSELAB_FORWARD(cublaslt, cublasLtMatmulDescSetAttribute);
FUSELAB_FORWARD(cublaslt, cublasLtMatmulPreferenceCreate);
FUSELAB_FORWARD(cublaslt, cublasLtMatmulPreferenceDestroy);
FUSELAB_FORWARD(cublaslt, cublasLtMatmulPreferenceSetAttribute);
FUSELAB_FORWARD(cublaslt, cublasLtMatrixLayoutCreate);
FUSELAB_FORWARD(cublaslt, cublasLtMatrixLayoutDestroy);
FUSELAB_FORWARD(cublas, cublasCreate_v2);
FUSELAB_FORWARD(cublas, cublasGemmGroupedBatchedEx_64);
FUSELAB_FORWARD(cudnn, cudnnConvolutionBackwardData);
FUSELAB_FORWARD(cudnn, cudnnConvolutionBackwardFilter);
FUSELAB_FORWARD(cudnn, cudnnConvolutionBiasActivationForward);
FUSELAB_FORWARD(cudnn, cudnnConvolutionForward);
FUSELAB_FORWARD(cudnn, cudnnCreate);
FUSELAB_FORWARD(cudnn, cudnnCreateActivationDescriptor);
FUSELAB_FORWARD(cudnn, cudnnCreateConvolutionDescriptor);
FUSELAB_FORWARD(cudnn, cudnnCreateFilterDescriptor);
FUSELAB_FORWARD(cudnn, cudnnCreateTensorDescriptor);
FUSELAB_FORWARD(cudnn, cudnnDestroyActivationDescriptor);
FUSELAB_FORWARD(cudnn, cudnnDestroyConvolutionDescriptor);
FUSELAB_FORWARD(cudnn, cudnnDestroyFilterDescriptor);
FUSELAB_FORWARD(cudnn, cudnnDestroyTensorDescriptor);
FUSELAB_FORWARD(cudnn, cudnnGetConvolutionBackwardDataAlgorithm_v7);
FUSELAB_FORWARD(cudnn, cudnnGetConvolutionBackwardFilterAlgorithm_v7);
FUSELAB_FORWARD(cudnn, cudnnGetConvolutionForwardAlgorithm_v7);
FUSELAB_FORWARD(cudnn, cudnnGetErrorString);
FUSELAB_FORWARD(cudnn, cudnnSetActivationDescriptor);
FUSELAB_FORWARD(cudnn, cudnnSetConvolution2dDescriptor);
FUSELAB_FORWARD(cudnn, cudnnSetConvolutionMathType);
FUSELAB_FORWARD(cudnn, cudnnSetFilter4dDescriptor);
FUSELAB_FORWARD(cudnn, cudnnSetTensor4dDescriptor);
