// oneDNN matmuls with post-ops: the CPU GEMMs that finish their output in their own tiles.
//
//   C = act(alpha * op(A) op(B) + beta * C + bias + addend)
//
// op(A) is [m, k], op(B) is [k, n], C and addend are [m, n], all row-major with leading dimensions
// (op(X) is X or its transpose, a stride, never a copy); bias is [n], added to every row. oneDNN
// keeps each tile's float32 accumulator in registers and applies bias, beta * C (its sum post-op),
// the addend (binary add) and act (eltwise) before the tile is stored, so none of them costs a pass
// over C. T is float or bfloat16 (float32 accumulation, rounded once into C); oneDNN's CPU matmul
// has no float64.
//
// A primitive is made once per (shape, leading dimensions, dtype, transposes, post-ops, threads)
// and kept in a small thread-safe map, as kernels/cuda/gemm.cu keeps cuBLASLt's algorithms; with
// varying_shape, once per (dtype, transposes, post-ops, threads), the shape and leading dimensions
// given when it runs (where oneDNN has no fast such primitive, the shape's own runs instead).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/activation_math.h"
#include "kernels/bfloat16.h"

namespace fuselab::kernels::cpu {

template <class T>
struct OnednnMatmul {
  bool transpose_a, transpose_b;
  int64_t m, n, k;
  float alpha, beta;
  const T* a;
  int64_t lda;
  const T* b;
  int64_t ldb;
  const T* bias;    // may be null
  const T* addend;  // may be null; leading dimension ldc
  Activation act;
  T* c;
  int64_t ldc;
  bool varying_shape = false;  // run the primitive made for every shape of its kind (gemm.h, GemmShape)
};

// Runs the matmul and returns true, or returns false with C untouched when oneDNN has only its
// reference (scalar) implementation for it on this CPU, or none (k = 0).
template <class T>
bool onednn_matmul(const OnednnMatmul<T>& g);

// Whether oneDNN has a fast matmul for T on this CPU at all (bfloat16 needs AVX-512).
template <class T>
bool onednn_runs();

// The instruction set oneDNN runs on this CPU, e.g. "avx512_core_bf16" (DNNL_MAX_CPU_ISA caps it).
std::string onednn_isa();

}  // namespace fuselab::kernels::cpu
