// RotaryEmbedding against Hugging Face Llama's formula written out here (q and k times cos, plus
// rotate_half times sin, with inverse frequencies theta^(-2e/D)), its position offset, grouped
// heads, and its bad inputs. The op-case table checks its grads on every device.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "fuser/sequential.h"
#include "ops/basic/rotary_embedding.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::random_tensor;

// apply_rotary_pos_emb of transformers' Llama on qkv [B, T, (H + 2 K) D] as a plain loop, positions
// from `offset`.
std::vector<double> reference(const Tensor& qkv, const AttentionHeads& heads, double theta, int64_t offset) {
  const int64_t T = qkv.size(1), D = qkv.size(2) / heads.columns(), half = D / 2;
  std::vector<double> x = qkv.to_vector<double>(), y = x;
  for (size_t row = 0; row < x.size() / size_t(qkv.size(2)); ++row) {
    const int64_t position = offset + int64_t(row) % T;
    for (int64_t h = 0; h < heads.heads + heads.kv_heads; ++h) {
      const size_t at = row * size_t(qkv.size(2)) + size_t(h * D);
      for (int64_t e = 0; e < D; ++e) {
        const double inv_freq = 1.0 / std::pow(theta, double(2 * (e % half)) / double(D));
        const double angle = double(position) * inv_freq;
        const double rotated_half = e < half ? -x[at + size_t(e + half)] : x[at + size_t(e - half)];
        y[at + size_t(e)] = x[at + size_t(e)] * std::cos(angle) + rotated_half * std::sin(angle);
      }
    }
  }
  return y;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(RotaryEmbedding, MatchesLlamasRotateHalfOnQueriesAndKeysAndPassesValues) {
  for (const AttentionHeads heads : {AttentionHeads{2}, AttentionHeads{4, 2}, AttentionHeads{3, 1}}) {
    for (const double theta : {10000.0, 500000.0}) {
      Sequential seq({std::make_shared<RotaryEmbedding>(heads, theta)});
      const Tensor qkv = random_tensor({2, 7, heads.columns() * 8}, DType::Float64, 3);
      expect_near(seq(qkv).to_vector<double>(), reference(qkv, heads, theta, 0), 1e-12);
    }
  }
}

// Generation rotates new tokens at the positions after the cached ones: the last rows of a long
// sequence equal a short call given their offset.
TEST(RotaryEmbedding, APositionOffsetContinuesALongerSequence) {
  auto rope = std::make_shared<RotaryEmbedding>(AttentionHeads{2, 1});
  Sequential seq({rope});
  const Tensor qkv = random_tensor({1, 9, 4 * 6}, DType::Float64, 5);
  const std::vector<double> whole = seq(qkv).to_vector<double>(), x = qkv.to_vector<double>();
  const Tensor tail = from_vector(std::vector<double>(x.begin() + 6 * 24, x.end()), {1, 3, 24});
  const std::vector<double> tail_out = seq(tail, {}, {{rope, {{"position_offset", int64_t(6)}}}}).output.to_vector<double>();
  expect_near(tail_out, std::vector<double>(whole.begin() + 6 * 24, whole.end()), 1e-12);
  expect_near(tail_out, reference(tail, rope->heads(), rope->theta(), 6), 1e-12);
}

TEST(RotaryEmbedding, RefusesAnOddHeadSizeABadShapeAndANegativeOffset) {
  auto rope = std::make_shared<RotaryEmbedding>(AttentionHeads{2, 1});
  Sequential seq({rope});
  testing::expect_error([&] { seq(zeros({1, 3, 4 * 3})); }, {"RotaryEmbedding", "head size must be even", "3"});
  testing::expect_error([&] { seq(zeros({1, 3, 10})); }, {"RotaryEmbedding", "[1, 3, 10]", "2 heads over 1 kv_heads"});
  testing::expect_error([&] { seq(zeros({1, 3, 8}), {}, {{rope, {{"position_offset", int64_t(-1)}}}}); },
                        {"RotaryEmbedding", "position_offset", "-1"});
  testing::expect_error(
      [&] { seq(zeros({1, 3, 8}), {}, {{rope, {{"position_offset", std::numeric_limits<int64_t>::max()}}}}); },
      {"RotaryEmbedding", "position_offset must be in [0, 2^53 - 3] for 3 tokens", "9223372036854775807"});
  const int64_t last = (int64_t(1) << 53) - 3;  // the last offset whose 3 positions stay within 2^53
  seq(zeros({1, 3, 8}), {}, {{rope, {{"position_offset", last}}}});
  testing::expect_error([&] { seq(zeros({1, 3, 8}), {}, {{rope, {{"position_offset", last + 1}}}}); },
                        {"RotaryEmbedding", "got 9007199254740990"});
  testing::expect_error([] { RotaryEmbedding(AttentionHeads{2, 1}, 0.0); }, {"RotaryEmbedding", "theta"});
  testing::expect_error([] { AttentionHeads(4, 3); }, {"4 heads over 3 kv_heads", "multiple of kv_heads"});
}

}  // namespace
}  // namespace fuselab
