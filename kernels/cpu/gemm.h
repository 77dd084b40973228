// Row-major GEMMs on existing buffers for the CPU kernels, on OpenBLAS or oneDNN:
//
//   gemm:                C = alpha * op(A) op(B) + beta * C
//   gemm_with_epilogue:  C = act(op(A) op(B) + bias + addend)
//
// op(X) is X or its transpose (a flag, never a copy); op(A) is [m, k], op(B) is [k, n].
//
// The library: FUSELAB_CPU_GEMM=openblas|onednn, else oneDNN for bfloat16 and, on CPUs with
// AVX-512, float32 (OpenBLAS for float32 on the others, where it was measured faster). oneDNN
// takes the epilogue inside its tiles (post-ops: kernels/cpu/onednn.h), so the fused Linear ops
// make no separate pass for it, and it multiplies bfloat16 natively (AVX512_BF16 where the CPU has
// it), where OpenBLAS has no bfloat16 GEMM and widens both operands to float32 first. Measured in
// bench/RESULTS.md ("oneDNN as the CPU GEMM"). float64 always runs on OpenBLAS: oneDNN's CPU
// matmul has no float64. Where oneDNN has no fast implementation (bfloat16 on a CPU without
// AVX-512, or one call's shape), OpenBLAS runs it; so do plain float32 GEMMs too small for oneDNN's
// cost per call (gemm_library). The same choice governs float32 convolutions:
// oneDNN's (kernels/cpu/onednn_conv.h) for the geometries where it is faster, or im2col + GEMM
// (kernels/cpu/conv2d.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kernels/activation_math.h"
#include "kernels/bfloat16.h"

namespace fuselab::kernels::cpu {

enum class CpuGemm { OpenBlas, Onednn };

// The library that runs T's GEMMs on this CPU (gemm_library refines it per gemm() call). Throws
// std::invalid_argument for a FUSELAB_CPU_GEMM that is neither "openblas" nor "onednn".
template <class T>
CpuGemm cpu_gemm();

// Whether float32 convolutions may run on oneDNN: unless FUSELAB_CPU_GEMM is openblas (its direct
// convolutions beat im2col + GEMM on AVX2 and AVX-512 alike where they apply: conv2d.cc).
bool onednn_convolutions();

// Plain float32 gemm() calls of at most this many multiply-adds, such as a short FlashAttention
// tile's products at small head sizes, run on OpenBLAS: a oneDNN call costs about 1 us more before
// it multiplies (its memory objects and argument map are built per call). A 64 x 64 x 32
// product: OpenBLAS 2.7 us, oneDNN 3.3; at 64 x 64 x 48 they tie, at 64 x 64 x 64
// oneDNN is 1.12x faster (bench/gemm_bench.cc, BM_AttentionTileProduct; bench/RESULTS.md).
constexpr int64_t kSmallGemm = 64 * 64 * 32;

// The library one gemm() of [m, k] x [k, n] runs on: cpu_gemm<T>(), or OpenBLAS for a small
// float32 one. gemm_with_epilogue keeps to cpu_gemm<T>(), whose oneDNN takes the epilogue.
template <class T>
CpuGemm gemm_library(int64_t m, int64_t n, int64_t k);

// Overrides FUSELAB_CPU_GEMM for float32 and bfloat16, as tests do; nullopt restores it.
void set_cpu_gemm(std::optional<CpuGemm> backend);

// One line for benchmark logs: the library per dtype, oneDNN's ISA and OpenBLAS's kernels.
std::string cpu_gemm_description();

// Whether a gemm()'s shape comes again. oneDNN makes a primitive for each shape it is given, its
// kernels generated for that M, N and K (0.1-0.2 ms), and keeps it for the next call of that shape:
// Recurring, as a training step's GEMMs, the same every step. A mixture of experts' GEMMs (the
// grouped kernels') take the rows routed to each expert, a new count every call, so each call would
// make a primitive used once: Varying runs one primitive made for every shape of the call's kind
// (M, N, K and the leading dimensions given when it runs: oneDNN's gemm:jit, slower than the
// specialised kernels on small GEMMs, level or faster on large ones; bench/RESULTS.md). OpenBLAS
// takes both alike.
enum class GemmShape { Recurring, Varying };

template <class T>
void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, GemmShape shape = GemmShape::Recurring);

// What gemm_with_epilogue does with the product: scales it by alpha, adds bias [n] on every row,
// then addend [m, n], then applies the activation. An activation comes without an addend (the
// fused Linear ops' two epilogues), and alpha without a bias (ForwardLinearScaleAdd).
template <class T>
struct GemmEpilogue {
  const T* bias = nullptr;
  const T* addend = nullptr;
  Activation act = Activation::None;
  compute_t<T> alpha = 1;
};

// C and addend are contiguous [m, n]. Returns true where the epilogue ran inside the GEMM
// (oneDNN), false where it ran in one pass over C after it (OpenBLAS).
template <class T>
bool gemm_with_epilogue(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const T* a,
                        int64_t lda, const T* b, int64_t ldb, const GemmEpilogue<T>& epilogue, T* c);

}  // namespace fuselab::kernels::cpu
