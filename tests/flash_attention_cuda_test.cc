// The CUDA FlashAttention kernels (kernels/cuda/flash_attention.cu), launched directly, against a
// float64 reference written here from kernels/flash_attention.h's math with the whole [T, T]
// probabilities of each head: y, lse and dqkv, causal or not, with and without dropout (the same
// mask: dropout_scaled_mask at ((b H + h) T + i) T + j), with and without dqkv_out, on token counts
// that are not tile multiples (tiles are 32 rows for float32 and bfloat16, 16 for float64), T = 1,
// one head and the largest head dim. GPU memory is poisoned (NaN), so unwritten outputs show.
// Float64 is held to 1e-12, float32 to 2e-5 and bfloat16 (rounded inputs, float32 math, rounded
// outputs) to 2e-2, each relative to 1 + |reference|.
//
// flash_attention_cuda_emulated_test runs the same cases on the CUDA emulator, except the ones
// named *ManyTiles*. Every test reports SKIPPED where there is no CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/device_api.h"
#include "kernels/dropout_mask.h"
#include "kernels/flash_attention.h"
#include "kernels/rotary.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/random.h"
#include "tensor/error.h"
#include "tests/expect_error.h"

namespace fuselab {
namespace {

const Device kGpu = Device::cuda(0);

class FlashAttentionCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kernels::cuda::compiled_with_cuda()) GTEST_SKIP() << "built without CUDA (--config=cpu)";
    if (kernels::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount found none";
  }
  void TearDown() override {
    if (kernels::cuda::device_count() > 0) CachingAllocator::of(kGpu).set_poison(false);
  }
};

struct Case {
  int64_t batch, heads, tokens, head_dim;
  bool causal;
  double dropout = 0;
  bool with_dqkv_out = true;
  int64_t kv_heads = 0;  // 0: as many as heads
  bool rotary = false;   // q and k rotated as they load (kernels/rotary.h), theta 10000
  int64_t key_heads() const { return kv_heads == 0 ? heads : kv_heads; }
  int64_t qkv_width() const { return (heads + 2 * key_heads()) * head_dim; }
};

std::string describe(const Case& c) {
  return "B=" + std::to_string(c.batch) + " H=" + std::to_string(c.heads) + " K=" + std::to_string(c.key_heads()) +
         " T=" + std::to_string(c.tokens) +
         " D=" + std::to_string(c.head_dim) + (c.causal ? " causal" : "") + (c.rotary ? " rotary" : "") +
         " dropout=" + std::to_string(c.dropout) +
         (c.with_dqkv_out ? " with dqkv_out" : " dqkv_out null");
}

struct Reference {
  std::vector<double> y, lse, dqkv;
};

// cos and sin of the rotary angles of tokens [0, T), [T, D/2] each, as kernels/rotary.h defines them.
std::pair<std::vector<double>, std::vector<double>> rotary_tables(int64_t T, int64_t D) {
  const int64_t half = D / 2;
  std::vector<double> cos(size_t(T * half)), sin(cos.size());
  for (int64_t i = 0; i < T; ++i) {
    for (int64_t e = 0; e < half; ++e) {
      cos[size_t(i * half + e)] = std::cos(kernels::rotary_angle(i, e, D, 10000));
      sin[size_t(i * half + e)] = std::sin(kernels::rotary_angle(i, e, D, 10000));
    }
  }
  return {cos, sin};
}

// Turns the q and k heads of qkv [B, T, ld] by the angles (sign -1: back).
void rotate_queries_and_keys(std::vector<double>& qkv, const Case& c, double sign) {
  const int64_t T = c.tokens, D = c.head_dim, half = D / 2, ld = c.qkv_width();
  const auto [cos, sin] = rotary_tables(T, D);
  for (size_t row = 0; row < qkv.size() / size_t(ld); ++row) {
    const int64_t i = int64_t(row) % T;
    for (int64_t h = 0; h < c.heads + c.key_heads(); ++h) {
      double* x = qkv.data() + row * size_t(ld) + size_t(h * D);
      for (int64_t e = 0; e < half; ++e) {
        const double cs = cos[size_t(i * half + e)], sn = sign * sin[size_t(i * half + e)];
        const double x1 = x[e], x2 = x[e + half];
        x[e] = x1 * cs - x2 * sn;
        x[e + half] = x2 * cs + x1 * sn;
      }
    }
  }
}

// The header's math over whole heads, in float64: p_ij = e^(s_ij - lse_i) (0 where masked),
// y_i = sum_j p_ij z_ij v_j, D_i = dy_i . y_i, ds_ij = p_ij (z_ij dy_i . v_j - D_i),
// dq_i = scale sum_j ds_ij k_j, dk_j = scale sum_i ds_ij q_i, dv_j = sum_i p_ij z_ij dy_i.
// With c.rotary: the same on q and k rotated, and the q and k grads turned back.
Reference reference(const Case& c, double scale, uint64_t seed, std::vector<double> qkv,
                    const std::vector<double>& dy, const std::vector<double>& dqkv_out) {
  if (c.rotary) rotate_queries_and_keys(qkv, c, 1);
  const int64_t B = c.batch, H = c.heads, T = c.tokens, D = c.head_dim, C = H * D, ld = c.qkv_width();
  const int64_t K = c.key_heads(), G = H / K;  // query heads h read key head h / G
  Reference r{std::vector<double>(B * T * C), std::vector<double>(B * H * T), dqkv_out};
  if (r.dqkv.empty()) r.dqkv.assign(B * T * ld, 0.0);
  std::vector<double> p(T * T), z(T * T);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      auto q = [&](int64_t i, int64_t d) { return qkv[(b * T + i) * ld + h * D + d]; };
      const int64_t k_at = (H + h / G) * D, v_at = (H + K + h / G) * D;
      auto k = [&](int64_t j, int64_t d) { return qkv[(b * T + j) * ld + k_at + d]; };
      auto v = [&](int64_t j, int64_t d) { return qkv[(b * T + j) * ld + v_at + d]; };
      auto g = [&](int64_t i, int64_t d) { return dy[(b * T + i) * C + h * D + d]; };
      for (int64_t i = 0; i < T; ++i) {
        double m = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          double s = 0;
          for (int64_t d = 0; d < D; ++d) s += q(i, d) * k(j, d);
          p[i * T + j] = c.causal && j > i ? -INFINITY : s * scale;
          m = std::max(m, p[i * T + j]);
          z[i * T + j] = c.dropout > 0 ? kernels::dropout_scaled_mask<double>(seed, ((b * H + h) * T + i) * T + j, c.dropout) : 1.0;
        }
        double l = 0;
        for (int64_t j = 0; j < T; ++j) l += std::exp(p[i * T + j] - m);
        const double lse = m + std::log(l);
        r.lse[(b * H + h) * T + i] = lse;
        for (int64_t j = 0; j < T; ++j) p[i * T + j] = std::exp(p[i * T + j] - lse);
        for (int64_t d = 0; d < D; ++d) {
          double y = 0;
          for (int64_t j = 0; j < T; ++j) y += p[i * T + j] * z[i * T + j] * v(j, d);
          r.y[(b * T + i) * C + h * D + d] = y;
        }
      }
      for (int64_t i = 0; i < T; ++i) {
        double row_dot = 0;
        for (int64_t d = 0; d < D; ++d) row_dot += g(i, d) * r.y[(b * T + i) * C + h * D + d];
        for (int64_t j = 0; j < T; ++j) {
          double dp = 0;
          for (int64_t d = 0; d < D; ++d) dp += g(i, d) * v(j, d);
          const double pij = p[i * T + j], zij = z[i * T + j], ds = pij * (zij * dp - row_dot);
          for (int64_t d = 0; d < D; ++d) {
            r.dqkv[(b * T + i) * ld + h * D + d] += scale * ds * k(j, d);
            r.dqkv[(b * T + j) * ld + k_at + d] += scale * ds * q(i, d);
            r.dqkv[(b * T + j) * ld + v_at + d] += pij * zij * g(i, d);
          }
        }
      }
    }
  }
  if (c.rotary) rotate_queries_and_keys(r.dqkv, c, -1);
  return r;
}

void expect_close(const Tensor& gpu, const std::vector<double>& want, double tol, const std::string& what) {
  const std::vector<double> got = gpu.to(Device::cpu()).to(DType::Float64).to_vector<double>();
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t e = 0; e < got.size(); ++e) {
    ASSERT_LE(std::abs(got[e] - want[e]), tol * (1 + std::abs(want[e]))) << what << " at element " << e;
  }
}

std::vector<double> values(const Tensor& t) { return t.to(DType::Float64).to_vector<double>(); }

DType lse_dtype(DType dtype) { return dtype == DType::Float64 ? DType::Float64 : DType::Float32; }

// The forward and backward kernels on the GPU against the reference, on inputs rounded to `dtype`.
template <class T>
void check(const Case& c, DType dtype, double tol) {
  using C = compute_t<T>;
  SCOPED_TRACE(describe(c));
  const int64_t B = c.batch, H = c.heads, T_ = c.tokens, D = c.head_dim, width = H * D;
  const kernels::AttentionShape shape{B, H, c.key_heads(), T_, D};
  const double scale = 1 / std::sqrt(double(D));
  const uint64_t seed = 1234;
  Generator gen(17);
  const Tensor qkv = randn({B, T_, c.qkv_width()}, DType::Float64, &gen).to(dtype);
  const Tensor dy = randn({B, T_, width}, DType::Float64, &gen).to(dtype);
  const Tensor dqkv_out = c.with_dqkv_out ? randn({B, T_, c.qkv_width()}, DType::Float64, &gen).to(dtype) : Tensor();
  const Reference want =
      reference(c, double(C(scale)), seed, values(qkv), values(dy), c.with_dqkv_out ? values(dqkv_out) : std::vector<double>{});

  CachingAllocator::of(kGpu).set_poison(true);
  const Tensor qkv_gpu = qkv.to(kGpu), dy_gpu = dy.to(kGpu);
  const Tensor dqkv_out_gpu = c.with_dqkv_out ? dqkv_out.to(kGpu) : Tensor();
  const Tensor y = empty({B, T_, width}, dtype, kGpu), lse = empty({B, H, T_}, lse_dtype(dtype), kGpu);
  const kernels::FlashDropout dropout{c.dropout, seed};
  const auto [cos, sin] = rotary_tables(T_, D);
  const Tensor cos_gpu = from_vector(cos, {T_, D / 2}).to(lse_dtype(dtype)).to(kGpu);
  const Tensor sin_gpu = from_vector(sin, {T_, D / 2}).to(lse_dtype(dtype)).to(kGpu);
  const kernels::FlashRotary<C> rotary =
      c.rotary ? kernels::FlashRotary<C>{cos_gpu.ptr<C>(), sin_gpu.ptr<C>()} : kernels::FlashRotary<C>{};
  launch("FlashAttention", qkv_gpu,
         kernels::FlashAttentionForward<T>{shape, qkv_gpu.ptr<T>(), y.ptr<T>(), lse.ptr<C>(), C(scale), c.causal, dropout,
                                           rotary});
  auto backward = [&] {
    const Tensor dqkv = empty({B, T_, c.qkv_width()}, dtype, kGpu);
    launch("FlashAttention", qkv_gpu,
           kernels::FlashAttentionBackward<T>{shape, qkv_gpu.ptr<T>(), y.ptr<T>(), lse.ptr<C>(), dy_gpu.ptr<T>(),
                                              ptr_or_null<T>(dqkv_out_gpu), dqkv.ptr<T>(), C(scale), c.causal,
                                              dropout, rotary});
    return dqkv;
  };
  const Tensor dqkv = backward();
  const std::vector<double> again = values(backward().to(Device::cpu()));
  CachingAllocator::of(kGpu).set_poison(false);

  expect_close(y, want.y, tol, "y");
  expect_close(lse, want.lse, tol, "lse");
  expect_close(dqkv, want.dqkv, tol, "dqkv");
  EXPECT_EQ(values(dqkv.to(Device::cpu())), again) << "the backward is not deterministic";
}

// Two query tiles in float32 (three in float64), the last one partial.
const std::vector<Case> kSmallCases = {
    {2, 2, 37, 16, true},
    {2, 2, 37, 16, false, 0, false},
    {1, 1, 1, 8, true},                 // T = 1
    {1, 1, 1, 8, false, 0.5, false},    // T = 1 with dropout
    {1, 1, 33, 12, true, 0.3},          // one head, dropout, head dim not a power of two
    {1, 3, 20, 5, false, 0.2, false},   // one partial tile, dropout, no dqkv_out
    {1, 1, 17, 16, true, 0.25, false},  // float64's diagonal tile plus one row
    {2, 4, 37, 8, true, 0.2, true, 2},  // grouped-query: two query heads per key head
    {1, 3, 20, 4, false, 0, false, 1},  // multi-query
    {2, 4, 37, 8, true, 0.2, true, 2, true},  // rotary, grouped, with dqkv_out
    {1, 2, 20, 6, false, 0, false, 0, true},  // rotary, head dim not a power of two
};

TEST_F(FlashAttentionCuda, Float64MatchesTheReference) {
  for (const Case& c : kSmallCases) check<double>(c, DType::Float64, 1e-12);
}

TEST_F(FlashAttentionCuda, Float32MatchesTheReference) {
  for (const Case& c : kSmallCases) check<float>(c, DType::Float32, 2e-5);
}

TEST_F(FlashAttentionCuda, BFloat16MatchesTheReferenceLoosely) {
  check<bfloat16>({2, 2, 37, 16, true, 0.3}, DType::BFloat16, 2e-2);
  check<bfloat16>({1, 1, 5, 8, false, 0, false}, DType::BFloat16, 2e-2);
}

TEST_F(FlashAttentionCuda, TakesTheLargestHeadDim) {
  check<float>({1, 1, 5, 128, true, 0.1}, DType::Float32, 2e-5);
  check<double>({1, 1, 5, 128, false}, DType::Float64, 1e-12);
}

// Many tiles: for a GPU (the emulator leaves these out).
TEST_F(FlashAttentionCuda, ManyTilesMatchTheReference) {
  check<float>({2, 3, 257, 64, true, 0.1}, DType::Float32, 2e-5);
  check<float>({1, 2, 300, 128, false}, DType::Float32, 2e-5);
  check<double>({2, 2, 129, 128, true, 0.2}, DType::Float64, 1e-12);
  check<bfloat16>({2, 4, 200, 64, true}, DType::BFloat16, 2e-2);
}

TEST_F(FlashAttentionCuda, RefusesAHeadDimAboveTheMaximum) {
  const kernels::AttentionShape shape{1, 1, 1, 4, 129};
  const Tensor qkv = zeros({1, 4, 3 * 129}, DType::Float32, kGpu), y = zeros({1, 4, 129}, DType::Float32, kGpu);
  const Tensor lse = zeros({1, 1, 4}, DType::Float32, kGpu), dqkv = zeros({1, 4, 3 * 129}, DType::Float32, kGpu);
  testing::expect_error(
      [&] {
        launch("FlashAttention", qkv,
               kernels::FlashAttentionForward<float>{shape, qkv.ptr<float>(), y.ptr<float>(), lse.ptr<float>(), 1.0f,
                                                     true, {}});
      },
      {"FlashAttention", "flash_attention_forward_kernel", "head_dim 129"});
  testing::expect_error(
      [&] {
        launch("FlashAttention", qkv,
               kernels::FlashAttentionBackward<float>{shape, qkv.ptr<float>(), y.ptr<float>(), lse.ptr<float>(),
                                                      y.ptr<float>(), nullptr, dqkv.ptr<float>(), 1.0f, false, {}});
      },
      {"FlashAttention", "flash_attention_backward_kernel", "head_dim 129"});
}

}  // namespace
}  // namespace fuselab
