// The FlashAttention fusion: it fires on [RotaryEmbedding], AttentionScores, Softmax, [Dropout],
// AttentionValues in both passes; fused and unfused agree on the output and every grad (float64 to
// 1e-10, float32 to 1e-5), causal and not, with grouped-query heads and with the rotary embedding
// inside, for sequence lengths that are not tile multiples, T = 1 and one head, in
// eval and in training with dropout, and with qkv also returned (its own grad added), on either
// instruction set; bfloat16 follows float32; and it never holds the [B, H, T, T] scores.
#include <gtest/gtest.h>

#include <memory>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "tests/isa_copies.h"
#include "ops/basic/attention.h"
#include "ops/basic/rotary_embedding.h"
#include "ops/basic/softmax.h"
#include "tensor/allocator.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

using testing::random_tensor;

struct Attention {
  int64_t batch, tokens, heads, head_dim;
  bool causal;
  int64_t kv_heads = 0;  // 0: as many as heads
  bool rotary = false;   // a RotaryEmbedding first
  AttentionHeads attention_heads() const { return {heads, kv_heads == 0 ? heads : kv_heads}; }
  Shape qkv() const { return {batch, tokens, attention_heads().columns() * head_dim}; }
};

// [rotary ->] scores -> softmax -> dropout(p, seed) -> values, qkv on a hidden channel between the ends.
Sequential attention(const Attention& a, double p, uint64_t seed) {
  std::vector<std::shared_ptr<BasicOp>> ops = attention_ops(a.attention_heads(), a.causal, p, seed);
  if (a.rotary) ops.insert(ops.begin(), std::make_shared<RotaryEmbedding>(a.attention_heads()));
  return Sequential(ops);
}

TEST(FlashAttention, FiresInBothPasses) {
  Sequential seq = attention({1, 4, 2, 3, true}, 0.1, 1);
  const std::string fused = "FlashAttention(attentionscores0, softmax0, dropout0, attentionvalues0)";
  EXPECT_EQ(seq.describe(), "forward: [" + fused + "]\nbackward: [" + fused + "]");
}

TEST(FlashAttention, CoversTheRotaryEmbeddingBeforeIt) {
  Sequential seq = attention({1, 4, 2, 4, true, 1, true}, 0.0, 1);
  const std::string fused = "FlashAttention(rotaryembedding0, attentionscores0, softmax0, dropout0, attentionvalues0)";
  EXPECT_EQ(seq.describe(), "forward: [" + fused + "]\nbackward: [" + fused + "]");
}

TEST(FlashAttention, DoesNotFuseValuesThatReadAnotherTensor) {
  auto scores = std::make_shared<AttentionScores>(1, false);
  Sequential seq({scores, std::make_shared<Softmax>(), std::make_shared<AttentionValues>(1)});
  EXPECT_EQ(seq.describe().find("FlashAttention"), std::string::npos) << seq.describe();
}

// Fused against unfused: float64 to 1e-10 (relative) and 1e-12, float32 to 1e-5.
void expect_runs_match(const RunResult& fused, const RunResult& unfused, DType dtype) {
  const bool f64 = dtype == DType::Float64;
  testing::expect_runs_match(fused, unfused, f64 ? 1e-10 : 1e-5, f64 ? 1e-12 : 1e-5);
}

// Twin models with the same dropout seed, one fused and one not, so that both draw the same masks.
void expect_fused_matches_unfused(const Attention& a, DType dtype, bool training, double p) {
  Sequential fused = attention(a, p, 42), unfused = attention(a, p, 42);
  fused.to(dtype).train(training);
  unfused.to(dtype).train(training).set_fusion_switches(false);
  const Tensor qkv = random_tensor(a.qkv(), dtype, 7);
  for (int call = 0; call < 2; ++call) {  // the second call draws the next mask
    expect_runs_match(run_with_backward(fused, qkv, {}), run_with_backward(unfused, qkv, {}), dtype);
  }
}

TEST(FlashAttention, MatchesUnfusedOnOutputAndGrads) {
  for (const Attention& a : {Attention{2, 5, 2, 3, true}, Attention{2, 5, 2, 3, false}, Attention{1, 1, 1, 4, true},
                             Attention{1, 100, 1, 8, true}, Attention{2, 70, 3, 5, false},
                             Attention{2, 70, 4, 5, true, 2}, Attention{1, 67, 3, 4, false, 1},
                             Attention{2, 70, 4, 6, true, 2, true}, Attention{1, 5, 2, 4, false, 0, true},
                             // more keys than one of the CPU forward's key tiles (256), not a multiple
                             Attention{1, 300, 2, 4, true, 1, true}, Attention{1, 300, 2, 4, false}}) {
    for (DType dtype : {DType::Float64, DType::Float32}) {
      for (bool training : {false, true}) {
        SCOPED_TRACE("T " + std::to_string(a.tokens) + " " + a.attention_heads().describe() +
                     (a.rotary ? " rotary" : "") + " head_dim " +
                     std::to_string(a.head_dim) + (a.causal ? " causal " : " ") + dtype_name(dtype) +
                     (training ? " training" : " eval"));
        expect_fused_matches_unfused(a, dtype, training, 0.25);
      }
    }
  }
}

// qkv also comes back to the caller, so the loss gives it a grad of its own, which the fused
// backward adds to the attention's (dqkv_out in kernels/flash_attention.h).
TEST(FlashAttention, MatchesUnfusedWhenQkvIsAlsoReturned) {
  auto qkv_returned = [] {
    auto scores = std::make_shared<AttentionScores>(2, true);
    auto values = std::make_shared<AttentionValues>(2);
    scores->set_extra_output_channel(0, "qkv", /*to_caller=*/true);
    values->set_extra_input_channel(0, "qkv");
    return Sequential({scores, std::make_shared<Softmax>(), values});
  };
  for (DType dtype : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(dtype));
    Sequential fused = qkv_returned(), unfused = qkv_returned();
    fused.to(dtype);
    unfused.to(dtype).set_fusion_switches(false);
    ASSERT_NE(fused.describe().find("FlashAttention"), std::string::npos) << fused.describe();
    const Tensor qkv = random_tensor({2, 70, 3 * 2 * 5}, dtype, 3);
    const RunResult f = run_with_backward(fused, qkv, {}), u = run_with_backward(unfused, qkv, {});
    ASSERT_EQ(f.outputs.size(), 2u);  // y and qkv
    expect_runs_match(f, u, dtype);
  }
}

// A rotated qkv that goes back to the caller would need writing out, so the fusion leaves the
// RotaryEmbedding out, and the rest still fuses and matches.
TEST(FlashAttention, LeavesTheRotaryEmbeddingOutWhenTheRotatedQkvGoesToTheCaller) {
  auto model = [] {
    std::vector<std::shared_ptr<BasicOp>> ops = attention_ops(AttentionHeads{2, 1}, true, 0.0, 0);
    ops.front()->set_extra_output_channel(0, "qkv", /*to_caller=*/true);
    ops.insert(ops.begin(), std::make_shared<RotaryEmbedding>(AttentionHeads{2, 1}));
    return Sequential(ops);
  };
  Sequential fused = model(), unfused = model();
  fused.to(DType::Float64);
  unfused.to(DType::Float64).set_fusion_switches(false);
  EXPECT_NE(fused.describe().find("RotaryEmbedding(rotaryembedding0), FlashAttention(attentionscores0"),
            std::string::npos) << fused.describe();
  const Tensor qkv = random_tensor({2, 9, 4 * 4}, DType::Float64, 3);
  expect_runs_match(run_with_backward(fused, qkv, {}), run_with_backward(unfused, qkv, {}), DType::Float64);
}

// Many query tiles, which the CPU kernel runs on several threads at once, each with its own tile
// GEMMs: the GEMM library (kernels/cpu/gemm.h, OpenBLAS or oneDNN by CPU and size) must keep their
// intermediate results apart. At T 320 the later query tiles read two key tiles.
TEST(FlashAttention, MatchesUnfusedWhenTilesRunOnSeveralThreads) {
  for (const Attention& a : {Attention{4, 256, 4, 32, true}, Attention{2, 256, 2, 64, true},
                             Attention{2, 320, 4, 32, true, 2, true}}) {
    for (bool training : {false, true}) {
      SCOPED_TRACE("head_dim " + std::to_string(a.head_dim) + (training ? " training" : " eval"));
      expect_fused_matches_unfused(a, DType::Float32, training, 0.1);
    }
  }
}

// The kernel's rows are compiled for baseline x86-64, AVX2 and AVX-512 (kernels/cpu/isa.h): each
// copy matches the unfused ops.
TEST(FlashAttention, MatchesUnfusedOnEveryInstructionSet) {
  for (const testing::IsaCopy& copy : testing::kIsaCopies) {
    for (bool training : {false, true}) {
      SCOPED_TRACE(std::string(copy.name) + " where the CPU has it" + (training ? ", training" : ""));
      testing::with_isa(copy, [&] { expect_fused_matches_unfused({2, 70, 3, 5, true}, DType::Float32, training, 0.25); });
    }
  }
}

// In bfloat16 the unfused path rounds the probabilities to bfloat16 and the fused one keeps them in
// float32, so both are held to the float32 run on the same rounded qkv, loosely.
TEST(FlashAttention, BFloat16FollowsFloat32) {
  for (const Attention& a : {Attention{2, 37, 2, 16, true}, Attention{1, 70, 3, 8, false},
                             Attention{2, 37, 4, 16, true, 2, true}}) {
    Sequential reference = attention(a, 0.0, 1), fused = attention(a, 0.0, 1), unfused = attention(a, 0.0, 1);
    reference.to(DType::Float32).set_fusion_switches(false);
    fused.to(DType::BFloat16);
    unfused.to(DType::BFloat16).set_fusion_switches(false);
    const Tensor qkv = random_tensor(a.qkv(), DType::BFloat16, 7);
    const RunResult expected = run_with_backward(reference, qkv.to(DType::Float32), {});
    SCOPED_TRACE("T " + std::to_string(a.tokens) + (a.causal ? " causal" : ""));
    testing::expect_runs_match(run_with_backward(fused, qkv, {}), expected, 3e-2, 3e-2);
    testing::expect_runs_match(run_with_backward(unfused, qkv, {}), expected, 3e-2, 3e-2);
  }
}

TEST(FlashAttention, GradientsMatchFiniteDifferences) {
  for (bool causal : {true, false}) {
    Sequential seq = attention({1, 6, 2, 2, causal}, 0.0, 1);
    seq.to(DType::Float64);
    std::string worst;
    EXPECT_LT(sequential_gradient_error(seq, random_tensor({1, 6, 12}, DType::Float64, 3), {}, &worst), 1e-6)
        << worst;
  }
}

// The unfused path holds [B, H, T, T] scores and probabilities; the fused one must stay far below,
// at what forward + backward must hold above the caller's qkv: the output, its grad and dqkv
// (no stand-in zeros for the qkv that AttentionScores passes to AttentionValues inside the op).
TEST(FlashAttention, NeverHoldsTheScores) {
  const Attention a{1, 256, 2, 8, true};
  const size_t scores_bytes = size_t(a.batch * a.heads * a.tokens * a.tokens) * sizeof(float);
  CachingAllocator& cpu = CachingAllocator::of(Device::cpu());
  for (bool fused : {true, false}) {
    Sequential seq = attention(a, 0.0, 1);
    seq.set_fusion_switches(fused);
    const Tensor qkv = random_tensor(a.qkv(), DType::Float32, 2).set_requires_grad(true);
    cpu.reset_peak();
    const size_t before = cpu.stats().bytes_in_use;
    backward(sum(seq(qkv)));
    const size_t peak = cpu.stats().peak_bytes_in_use - before;
    if (fused) {
      EXPECT_LT(peak, scores_bytes / 2) << "fused peak " << peak;
      EXPECT_LT(peak, 2 * qkv.numel() * sizeof(float)) << "fused peak " << peak;
    } else {
      EXPECT_GE(peak, scores_bytes) << "unfused peak " << peak;
    }
  }
}

}  // namespace
}  // namespace fuselab
