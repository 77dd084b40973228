// LMHeadCrossEntropy: the output Linear (and Bias) and its CrossEntropy fused. It fires, agrees with
// the unfused ops on the loss and every grad (ignored rows, a last chunk shorter than the others, a
// bias, a weight tied to the token embedding, no counted row), and holds far fewer bytes than the logits.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/tape.h"
#include "fuser/sequential.h"
#include "ops/basic/bias.h"
#include "ops/basic/cross_entropy.h"
#include "ops/basic/embedding.h"
#include "ops/basic/linear.h"
#include "ops/fused/lm_head_cross_entropy.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::random_tensor;

// A vocabulary wide enough that a few dozen rows take several chunks: 32 rows of float64, 64 of float32.
constexpr int64_t kVocab = 65536, kWidth = 6;

// Labels [batch, tokens] in [0, kVocab), every third one ignored.
Tensor labels_for(int64_t batch, int64_t tokens) {
  std::vector<int64_t> values(size_t(batch * tokens));
  for (size_t i = 0; i < values.size(); ++i) values[i] = i % 3 == 2 ? -100 : int64_t((i * 7919 + 11) % kVocab);
  return from_vector<int64_t>(values, {batch, tokens});
}

struct Head {
  std::shared_ptr<Linear> linear = std::make_shared<Linear>(kWidth, kVocab);
  Sequential seq{linear, std::make_shared<CrossEntropy>()};
  explicit Head(bool with_bias = false) {
    if (with_bias) seq.insert(1, std::make_shared<Bias>(kVocab, 0.5));
  }
};

TEST(LMHeadCrossEntropy, FiresOnALinearBeforeACrossEntropy) {
  Head head;
  const std::string text = head.seq.describe(), fused = "LMHeadCrossEntropy(linear0, crossentropy0)";
  const size_t forward = text.find(fused);  // in the forward list, then in the backward list
  ASSERT_NE(forward, std::string::npos) << text;
  EXPECT_NE(text.find(fused, forward + 1), std::string::npos) << text;
}

// 70 rows: in float64 chunks of 32, 32 and 6; in float32 of 64 and 6.
TEST(LMHeadCrossEntropy, MatchesUnfusedOverChunksWithIgnoredRows) {
  for (const auto& [dtype, with_bias] : {std::pair{DType::Float64, false}, std::pair{DType::Float32, false},
                                         std::pair{DType::Float64, true}}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)) + (with_bias ? " with a bias" : ""));
    const int64_t chunk = LMHeadCrossEntropy::chunk_rows(kVocab, dtype);
    ASSERT_EQ(chunk, dtype == DType::Float64 ? 32 : 64);
    Head head(with_bias);
    head.seq.to(dtype);
    const double tol = dtype == DType::Float64 ? 1e-10 : 1e-5;
    ASSERT_NE(head.seq.describe().find("LMHeadCrossEntropy"), std::string::npos);
    testing::expect_fused_matches_unfused(head.seq, random_tensor({2, 35, kWidth}, dtype, 2), {labels_for(2, 35)}, tol,
                                          tol);
  }
}

// bfloat16: the fused op runs widened to float32 and the unfused CrossEntropy in float32 over the
// bfloat16 logits, so both follow the float32 run on the same rounded inputs, loosely; the loss is
// float32 (its sums would keep three digits in bfloat16), the grads bfloat16.
TEST(LMHeadCrossEntropy, BFloat16FollowsFloat32) {
  for (bool with_bias : {false, true}) {
    SCOPED_TRACE(with_bias ? "with a bias" : "without a bias");
    Head reference(with_bias), fused(with_bias), unfused(with_bias);
    reference.seq.to(DType::Float32).set_fusion_switches(false);
    fused.seq.to(DType::BFloat16);
    unfused.seq.to(DType::BFloat16).set_fusion_switches(false);
    for (Head* head : {&fused, &unfused}) {
      for (size_t i = 0; i < head->seq.parameters().size(); ++i) {
        reference.seq.parameters()[i].set_data(head->seq.parameters()[i].to(DType::Float32).detach());
      }
    }
    ASSERT_NE(fused.seq.describe().find("LMHeadCrossEntropy"), std::string::npos) << fused.seq.describe();
    const Tensor x = random_tensor({2, 35, kWidth}, DType::BFloat16, 2);
    const RunResult expected = run_with_backward(reference.seq, x.to(DType::Float32), {labels_for(2, 35)});
    for (Head* head : {&fused, &unfused}) {
      const RunResult got = run_with_backward(head->seq, x, {labels_for(2, 35)});
      EXPECT_EQ(got.outputs[0].dtype(), DType::Float32);
      testing::expect_runs_match(got, expected, 3e-2, 3e-2);
    }
  }
}

TEST(LMHeadCrossEntropy, MatchesUnfusedWithTheWeightTiedToTheTokenEmbedding) {
  auto tokens = std::make_shared<Embedding>(kVocab, kWidth);
  auto linear = std::make_shared<Linear>(kWidth, kVocab);
  linear->share_parameter("weight", tokens->table());
  Sequential seq{tokens, linear, std::make_shared<CrossEntropy>()};
  seq.to(DType::Float64);
  std::vector<int64_t> ids(70);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t((i * 104729) % kVocab);
  EXPECT_NE(seq.describe().find("LMHeadCrossEntropy(linear0, crossentropy0)"), std::string::npos);
  testing::expect_fused_matches_unfused(seq, from_vector<int64_t>(ids, {2, 35}), {labels_for(2, 35)}, 1e-10, 1e-10);
}

TEST(LMHeadCrossEntropy, NoCountedRowGivesNanLossAndZeroGrads) {
  Head head;
  head.seq.to(DType::Float64);
  Tensor x = random_tensor({40, kWidth}, DType::Float64, 3);
  x.set_requires_grad(true);
  const Tensor loss = head.seq(x, {from_vector<int64_t>(std::vector<int64_t>(40, -100), {40})}).output;
  EXPECT_TRUE(std::isnan(loss.item()));
  backward(loss);
  for (double g : x.grad().to_vector<double>()) ASSERT_EQ(g, 0.0);
  for (double g : head.linear->weight().grad().to_vector<double>()) ASSERT_EQ(g, 0.0);
}

// Forward and backward hold at most a few chunks of logits, where the unfused pair holds all of them
// (70 x 65536 float32: 17.5 MiB, twice over with their grad) beside the weight and its grad (1.5 MiB each).
TEST(LMHeadCrossEntropy, HoldsAChunkOfLogitsNotAllOfThem) {
  Head head;
  const Tensor x = random_tensor({70, kWidth}, DType::Float32, 4);
  const Tensor labels = labels_for(1, 70).view({70});
  CachingAllocator& cpu = CachingAllocator::of(Device::cpu());
  auto peak_of_one_step = [&](bool fuse) {
    head.seq.set_fusion_switches(fuse);
    head.linear->weight().zero_grad();
    cpu.reset_peak();
    const size_t before = cpu.stats().bytes_in_use;
    backward(head.seq(x, {labels}).output);
    return cpu.stats().peak_bytes_in_use - before;
  };
  const size_t fused = peak_of_one_step(true), unfused = peak_of_one_step(false);
  const size_t logits = size_t(70 * kVocab * 4), chunk = size_t(64 * kVocab * 4);
  EXPECT_GE(unfused, 2 * logits);
  EXPECT_LE(fused, chunk + size_t(4) * kVocab * kWidth * 4) << "unfused " << unfused;
}

}  // namespace
}  // namespace fuselab
