#include "kernels/cpu/onednn.h"

#include <cstring>
#include <optional>
#include <tuple>
#include <vector>

#include "kernels/cpu/onednn_runtime.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels::cpu {
namespace {
using dnnl::memory;
using namespace onednn;

// Everything a primitive is specialised for: two matmuls with equal keys share one.
struct Key {
  memory::data_type type;
  bool transpose_a, transpose_b;
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  bool bias, addend;
  Activation act;
  int threads;

  auto tied() const {
    return std::tie(type, transpose_a, transpose_b, m, n, k, lda, ldb, ldc, alpha, beta, bias, addend, act, threads);
  }
  bool operator<(const Key& other) const { return tied() < other.tied(); }
};

// op(X), [rows, cols], over row-major memory with leading dimension ld: a transpose is a stride.
memory::desc matrix(const Key& key, int64_t rows, int64_t cols, int64_t ld, bool transposed) {
  return memory::desc({rows, cols}, key.type, transposed ? memory::dims{1, ld} : memory::dims{ld, 1});
}
memory::desc a_desc(const Key& key) { return matrix(key, key.m, key.k, key.lda, key.transpose_a); }
memory::desc b_desc(const Key& key) { return matrix(key, key.k, key.n, key.ldb, key.transpose_b); }
memory::desc c_desc(const Key& key) { return matrix(key, key.m, key.n, key.ldc, false); }
memory::desc bias_desc(const Key& key) { return matrix(key, 1, key.n, key.n, false); }

// The post-ops in the order they apply: beta * C, the addend, the activation.
dnnl::post_ops post_ops(const Key& key) {
  dnnl::post_ops ops;
  if (key.beta != 0) ops.append_sum(key.beta);
  if (key.addend) ops.append_binary(dnnl::algorithm::binary_add, c_desc(key));
  append_activation(ops, key.act);
  return ops;
}

// A primitive and the scratch memory each run of it needs. The scratchpad is the caller's
// (scratchpad_mode::user): oneDNN's own is one buffer shared by every primitive, so two threads
// running GEMMs at once (FlashAttention's tiles, one query tile per thread) would overwrite each
// other's intermediate results.
struct Matmul {
  dnnl::matmul primitive;
  memory::desc scratchpad;
};

// The primitive for a key, or none where oneDNN has only its reference implementation ("ref:any",
// scalar loops far slower than OpenBLAS) or none at all.
std::optional<Matmul> make_matmul(const Key& key) {
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(post_ops(key));  // a binary post-op takes no sizes given at run time
    if (key.alpha != 1) attr.set_output_scales(0, {key.alpha});
    const dnnl::matmul::desc desc = key.bias ? dnnl::matmul::desc(a_desc(key), b_desc(key), bias_desc(key), c_desc(key))
                                             : dnnl::matmul::desc(a_desc(key), b_desc(key), c_desc(key));
    const dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
    if (std::strncmp(pd.impl_info_str(), "ref", 3) == 0) return std::nullopt;
    return Matmul{dnnl::matmul(pd), pd.scratchpad_desc()};
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

// The key with every size and leading dimension left to run time: one primitive for all shapes.
Key any_shape(Key key) {
  key.m = key.n = key.k = key.lda = key.ldb = key.ldc = DNNL_RUNTIME_DIM_VAL;
  return key;
}

// The primitive a call of `key` runs: the one for any shape where the call's shape varies and
// oneDNN has a fast one (gemm:jit), else the shape's own.
std::optional<Matmul> matmul_for(const Key& key, bool varying_shape) {
  if (varying_shape) {
    if (auto matmul = cached<Key, std::optional<Matmul>>(any_shape(key), make_matmul)) return matmul;
  }
  return cached<Key, std::optional<Matmul>>(key, make_matmul);
}

}  // namespace

template <class T>
bool onednn_matmul(const OnednnMatmul<T>& g) {
  if (g.k == 0) return false;
  const int threads = g.m * g.n * g.k < kThreadedWork ? 1 : num_threads();
  const OpenMpThreads use_threads(threads);
  const Key key{data_type<T>(), g.transpose_a, g.transpose_b, g.m,    g.n,       g.k,     g.lda,        g.ldb,
                g.ldc,          g.alpha,       g.beta,        g.bias != nullptr, g.addend != nullptr, g.act, threads};
  const auto matmul = matmul_for(key, g.varying_shape);
  if (!matmul) return false;
  thread_local std::vector<char> scratchpad;  // this thread's, grown to the largest GEMM it ran
  if (scratchpad.size() < matmul->scratchpad.get_size()) scratchpad.resize(matmul->scratchpad.get_size());
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, wrap(a_desc(key), g.a)}, {DNNL_ARG_WEIGHTS, wrap(b_desc(key), g.b)},
      {DNNL_ARG_DST, wrap(c_desc(key), g.c)}, {DNNL_ARG_SCRATCHPAD, wrap(matmul->scratchpad, scratchpad.data())}};
  if (g.bias) args.emplace(DNNL_ARG_BIAS, wrap(bias_desc(key), g.bias));
  if (g.addend) {
    const int index = g.beta != 0 ? 1 : 0;  // its place in post_ops(), after the sum
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1, wrap(c_desc(key), g.addend));
  }
  run(matmul->primitive, args);
  return true;
}

template <class T>
bool onednn_runs() {
  static const bool runs = make_matmul(Key{data_type<T>(), false, false, 16, 16, 16, 16, 16, 16, 1.f, 0.f, false,
                                           false, Activation::None, num_threads()})
                               .has_value();
  return runs;
}

std::string onednn_isa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

template bool onednn_matmul<float>(const OnednnMatmul<float>&);
template bool onednn_matmul<bfloat16>(const OnednnMatmul<bfloat16>&);
template bool onednn_runs<float>();
template bool onednn_runs<bfloat16>();

}  // namespace fuselab::kernels::cpu
