// What the oneDNN kernels share (onednn.cc's matmuls, onednn_conv.cc's convolutions): the CPU
// engine, the calling thread's stream, OpenMP's thread count while a primitive is made and run,
// and a bounded thread-safe cache of primitives. Included only by those two files.
#pragma once

#include <omp.h>

#include <cstdint>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <type_traits>
#include <unordered_map>

#include "kernels/activation_math.h"
#include "kernels/bfloat16.h"

namespace fuselab::kernels::cpu::onednn {

template <class T>
dnnl::memory::data_type data_type() {
  return std::is_same_v<T, bfloat16> ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

inline const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// act as an eltwise post-op, with kernels/activation_math.h's formulas: ReLU is max(x, 0), GELU
// oneDNN's gelu_tanh (0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), not gelu_erf), SiLU its
// swish x sigmoid(alpha x) with alpha = 1 and QGELU with alpha = 1.702, Sigmoid its logistic, SReLU
// its relu followed by square.
inline void append_activation(dnnl::post_ops& ops, Activation act) {
  switch (act) {
    case Activation::None:
      break;
    case Activation::ReLU:
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      break;
    case Activation::GELU:
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f);
      break;
    case Activation::SiLU:
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_swish, 1.f, 0.f);
      break;
    case Activation::Sigmoid:
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_logistic, 0.f, 0.f);
      break;
    case Activation::QGELU:
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_swish, 1.702f, 0.f);
      break;
    case Activation::SReLU:
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_square, 0.f, 0.f);
      break;
  }
}

// A memory object over the caller's buffer (oneDNN never frees it).
inline dnnl::memory wrap(const dnnl::memory::desc& desc, const void* data) {
  return dnnl::memory(desc, cpu_engine(), const_cast<void*>(data));
}

// Runs a primitive on this thread's stream and waits for it.
inline void run(const dnnl::primitive& primitive, const std::unordered_map<int, dnnl::memory>& args) {
  thread_local dnnl::stream stream(cpu_engine());
  primitive.execute(stream, args);
  stream.wait();
}

// Work (multiply-adds) below this runs on one thread, as OpenBLAS runs it: splitting it gains less
// than the fork and the barrier cost, and on a loaded machine a barrier can wait milliseconds for
// a descheduled thread (attention's per-head GEMMs ran 15x slower on 2 threads).
constexpr int64_t kThreadedWork = 1 << 18;

// OpenMP's thread count for the calling thread while it lives; oneDNN reads it when it makes a
// primitive and when it runs one.
class OpenMpThreads {
 public:
  explicit OpenMpThreads(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~OpenMpThreads() { omp_set_num_threads(saved_); }

 private:
  const int saved_;
};

// The value made for a key, made once. The map is bounded: a program with endlessly new shapes
// (attention over growing lengths) starts it over instead of growing without end. Values are
// handles (primitives share their implementation when copied).
template <class Key, class Value, class Make>
Value cached(const Key& key, Make&& make) {
  constexpr size_t kCapacity = 512;
  static std::mutex mutex;
  static std::map<Key, Value> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find(key);
  if (found == cache.end()) {
    if (cache.size() >= kCapacity) cache.clear();
    found = cache.emplace(key, make(key)).first;
  }
  return found->second;
}

}  // namespace fuselab::kernels::cpu::onednn
