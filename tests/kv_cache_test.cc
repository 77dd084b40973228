// Generation with a KV cache (examples/kv_cache.h, the attention ops' "kv_cache" argument): the
// logits of every position, prefill and decode, equal a full forward over the whole window, for
// GPT-2's block and the llama preset's (RoPE, grouped-query attention), fused and unfused, on a
// batch of sequences, on the CPU and on CUDA (kv_cache_emulated_test: the CUDA emulator); and
// every misuse is an error naming what is wrong.
#include <gtest/gtest.h>

#include <limits>

#include "autograd/grad_mode.h"
#include "examples/generation.h"
#include "examples/kv_cache.h"
#include "examples/language_model.h"
#include "examples/models.h"
#include "kernels/cuda/device_api.h"
#include "ops/basic/attention.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"

namespace fuselab {
namespace {

using examples::GptConfig;
using examples::KVCache;
using testing::expect_error;

GptConfig small_config(const std::string& arch, int64_t layers = 2) {
  GptConfig c;
  c.vocab = 11, c.context = 12, c.width = 16, c.layers = layers, c.heads = 4, c.arch = arch;
  return c;
}

// The model's logits without its loss (the llama preset ends in one).
Sequential logits_model(const GptConfig& c, uint64_t seed) {
  Generator gen(seed);
  Sequential model = examples::gpt_model(c, gen);
  model.eval();
  if (examples::ends_in_loss(model)) return model.slice(0, -1);
  return model;
}

// Prefill over the first `prompt` tokens, then one token at a time: each step's logits against
// the full forward's at the same positions.
void expect_cache_matches_full_forward(const std::string& arch, bool fused, Device device = Device::cpu(),
                                       int64_t layers = 2) {
  SCOPED_TRACE(arch + (fused ? " fused" : " unfused") + " on " + device.str() + ", " + std::to_string(layers) + " layers");
  const GptConfig c = small_config(arch, layers);
  Sequential model = logits_model(c, 3);
  model.set_fusion_switches(fused);
  model.to(device);
  NoGradGuard no_grad;
  Generator gen(4);
  const int64_t batch = 2, prompt = 5;
  const Tensor ids = randint({batch, c.context}, c.vocab, &gen);
  const Tensor full = model(ids.to(device)).to(Device::cpu()).view({batch, c.context, c.vocab});
  KVCache cache(model, batch, c.context, c.width / c.heads, DType::Float32, device);
  for (int64_t at = 0; at < c.context;) {
    const int64_t t = at == 0 ? prompt : 1;
    std::vector<int64_t> step;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = at; i < at + t; ++i) step.push_back(ids.to_vector<int64_t>()[size_t(b * c.context + i)]);
    }
    const auto got = cache.forward(model, from_vector<int64_t>(step, {batch, t}).to(device)).to(Device::cpu()).to_vector<float>();
    const auto all = full.to_vector<float>();
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < t; ++i) {
        for (int64_t v = 0; v < c.vocab; ++v) {
          ASSERT_NEAR(got[size_t((b * t + i) * c.vocab + v)], all[size_t((b * c.context + at + i) * c.vocab + v)],
                      1e-5)
              << "sequence " << b << ", position " << at + i << ", logit " << v;
        }
      }
    }
    at += t;
  }
  EXPECT_EQ(cache.length(), c.context);
}

TEST(KVCache, Gpt2MatchesTheFullForwardAtEveryPosition) {
  expect_cache_matches_full_forward("gpt2", true);
  expect_cache_matches_full_forward("gpt2", false);
}

TEST(KVCache, LlamaMatchesTheFullForwardAtEveryPosition) {
  expect_cache_matches_full_forward("llama", true);
  expect_cache_matches_full_forward("llama", false);
}

// Without blocks there is nothing to cache, and positions still count from the cache's length.
TEST(KVCache, AModelWithoutBlocksMatchesTheFullForwardToo) {
  expect_cache_matches_full_forward("gpt2", true, Device::cpu(), 0);
  expect_cache_matches_full_forward("llama", true, Device::cpu(), 0);
}

TEST(KVCache, OnCudaMatchesTheFullForwardAtEveryPosition) {
  if (!kernels::cuda::compiled_with_cuda() || kernels::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  for (const char* arch : {"gpt2", "llama"}) {
    expect_cache_matches_full_forward(arch, true, Device::cuda(0));
    expect_cache_matches_full_forward(arch, false, Device::cuda(0));
  }
}

TEST(KVCache, MisuseIsAnErrorNamingIt) {
  const GptConfig c = small_config("llama");
  Sequential model = logits_model(c, 5);
  KVCache cache(model, 1, c.context, c.width / c.heads, DType::Float32, Device::cpu());
  const Tensor one = zeros({1, 1}, DType::Int64);
  expect_error([&] { cache.forward(model, one); }, {"KVCache::forward", "without grad"});
  NoGradGuard no_grad;
  expect_error([&] { cache.forward(model, zeros({2, 3}, DType::Int64)); }, {"KVCache::forward", "[1, T]"});
  cache.forward(model, zeros({1, c.context - 1}, DType::Int64));
  expect_error([&] { cache.forward(model, zeros({1, 2}, DType::Int64)); }, {"11 cached + 2", "capacity of 12"});

  // Ops in a nested Sequential, which per-call arguments cannot reach, would run without the cache.
  Sequential nesting({std::make_shared<Sequential>(
      std::vector<std::shared_ptr<BasicOp>>{std::make_shared<AttentionScores>(AttentionHeads(2), true)})});
  expect_error([&] { KVCache(nesting, 1, 8, 6, DType::Float32, Device::cpu()); },
               {"KVCache", "AttentionScores", "nested Sequential", "cannot reach"});

  // The attention op's own checks, for a caller that passes the arguments by hand.
  auto scores = std::make_shared<AttentionScores>(AttentionHeads(2), true);
  Sequential attention({scores});
  const Tensor qkv = zeros({1, 3, 12}, DType::Float32);
  expect_error([&] { attention(qkv, {}, {{scores, {{"kv_cache", zeros({1, 8, 12}, DType::Float32)}}}}); },
               {"AttentionScores", "both kv_cache and cache_length"});
  expect_error([&] { attention(qkv, {}, {{scores, {{"kv_cache", zeros({1, 8, 6}, DType::Float32)}, {"cache_length", int64_t(0)}}}}); },
               {"AttentionScores", "[1, 8, 6]", "expected [1, capacity, 12]"});
  expect_error([&] { attention(qkv, {}, {{scores, {{"kv_cache", zeros({1, 8, 12}, DType::Float32)}, {"cache_length", int64_t(6)}}}}); },
               {"AttentionScores", "cache_length 6 + 3", "KV cache's 8"});
}

// Greedy decoding by full forwards over the whole text so far (it stays within the context).
std::string greedy_by_full_forwards(Sequential& model, const CharVocabulary& vocab, const std::string& prompt,
                                    int64_t length) {
  NoGradGuard no_grad;
  model.eval();
  std::vector<int64_t> ids = vocab.encode(prompt).to_vector<int64_t>();
  std::vector<int64_t> generated;
  for (int64_t i = 0; i < length; ++i) {
    const int64_t t = int64_t(ids.size());
    const auto logits = model(from_vector<int64_t>(ids, {1, t})).view({t, vocab.size()}).slice(t - 1, t);
    Generator unused(0);
    ids.push_back(examples::sample_index(logits.to_vector<float>(), {0, 0, 1}, unused));
    generated.push_back(ids.back());
  }
  model.train();
  return vocab.decode(generated);
}

TEST(KVCache, SampledTextIsGreedyAtTemperatureZeroAndRepeatsWithItsSeed) {
  const CharVocabulary vocab("abcdefghij");
  const examples::TextTokenizer tokenizer(vocab);
  GptConfig c = small_config("gpt2");
  c.vocab = vocab.size();
  Generator init(6);
  Sequential model = examples::gpt_model(c, init);
  const int64_t head_dim = c.width / c.heads;
  Generator unused(0);
  const std::string greedy = examples::sample_text(model, tokenizer, "abc", c.context - 3, c.context, head_dim, 0, unused,
                                                   Device::cpu());
  EXPECT_EQ(greedy, greedy_by_full_forwards(model, vocab, "abc", c.context - 3));
  // Three contexts long: the cache fills and slides; a seed gives the same text again.
  auto sample = [&](uint64_t seed) {
    Generator gen(seed);
    return examples::sample_text(model, tokenizer, "a", 3 * c.context, c.context, head_dim, 1.0, gen, Device::cpu());
  };
  EXPECT_EQ(sample(7), sample(7));
  EXPECT_GE(sample(7).size(), size_t(3 * c.context));  // a character each, the unknown id 3 bytes
  expect_error([&] { examples::sample_text(model, tokenizer, "", 4, c.context, head_dim, 0, unused, Device::cpu()); },
               {"sample_text", "at least one character"});
}

TEST(KVCache, SamplingRefusesBadSettingsAndLogitsThatAreNotFinite) {
  Generator gen(1);
  const std::vector<float> logits{1, 2, 3};
  EXPECT_EQ(examples::sample_index(logits, {1.0, 1, 1}, gen), 2);  // top_k 1 keeps only the largest
  EXPECT_EQ(examples::sample_index(logits, {1.0, 0, 1e-9}, gen), 2);  // so does the smallest top_p
  expect_error([&] { examples::sample_index(logits, {1.0, 0, 0.0}, gen); }, {"sample_index", "top_p 0", "(0, 1]"});
  expect_error([&] { examples::sample_index(logits, {-1.0, 0, 1}, gen); }, {"sample_index", "temperature -1"});
  expect_error([&] { examples::sample_index(logits, {1.0, -1, 1}, gen); }, {"sample_index", "top_k -1"});
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  expect_error([&] { examples::sample_index({1, inf, 3}, {1.0, 0, 1}, gen); }, {"sample_index", "logit 1 of 3", "inf"});
  expect_error([&] { examples::sample_index({nan, nan}, {0.0, 0, 1}, gen); }, {"sample_index", "logit 0 of 2", "nan"});
}

}  // namespace
}  // namespace fuselab
