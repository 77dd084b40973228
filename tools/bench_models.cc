// The bench's table of models (see bench_models.h).
#include "tools/bench_models.h"

#include <cmath>

#include "autograd/functional.h"
#include "examples/square_fusions.h"
#include "fuser/registry.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/attention.h"
#include "ops/basic/cross_entropy.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/moe_mlp.h"
#include "ops/basic/rmsnorm.h"
#include "ops/basic/rotary_embedding.h"
#include "ops/fused/grouped_mlp.h"
#include "tensor/factories.h"

namespace fuselab::bench {
namespace {

using examples::Batch;

// The loss of the bench's own blocks (and of custom_fusion's, whose example sums its output): the
// mean squared error against a random target of the output's shape, drawn once with the batch. Its
// grad, 2 (out - target) / n, is a full tensor of the output's shape, as every training loss gives
// the model's output; a plain out.sum() would hand the last op a grad that is one value everywhere.
std::function<Tensor(const SequentialOutput&)> mse_against_random_target(const Shape& output_shape, DType dtype,
                                                                          Device device, Generator& gen) {
  const Tensor target = randn(output_shape, dtype, &gen).to(device);
  return [target](const SequentialOutput& out) { return mse(out.output, target); };
}

Tensor input_requiring_grad(const ModelSizes& s, DType dtype, Device device, Generator& gen) {
  Tensor x = randn({s.tokens, s.hidden}, dtype, &gen).to(device);
  x.set_requires_grad(true);
  return x;
}

// RMSNorm(x + Linear2(GELU(Linear1(x) + b1)) + b2), Linear1 [4H, H], Linear2 [H, 4H], called with
// x as its extra input.
BenchModel mlp_block() {
  BenchModel m{"mlp_block", 256, {}, nullptr, nullptr, nullptr};
  m.build = [](const ModelSizes& s, Generator& gen) {
    Sequential seq(linear_with_bias(s.hidden, 4 * s.hidden, &gen));
    seq.append(std::make_shared<GELU>()).append(linear_with_bias(4 * s.hidden, s.hidden, &gen));
    seq.append(std::make_shared<AddExtraInput>()).append(std::make_shared<RMSNorm>(s.hidden, 1e-6));
    return seq;
  };
  m.batch = [](const ModelSizes& s, DType dtype, Device device, Generator& gen) {
    const Tensor x = input_requiring_grad(s, dtype, device, gen);
    return Batch{x, {x}, mse_against_random_target(x.shape(), dtype, device, gen)};
  };
  return m;
}

// h = x + r, out = RMSNorm(h), h returned as an extra output.
BenchModel norm_block() {
  BenchModel m{"norm_block", 256, {}, nullptr, nullptr, nullptr};
  m.build = [](const ModelSizes& s, Generator&) {
    return Sequential({std::make_shared<AddExtraInput>(), std::make_shared<MakeExtraOutput>(),
                       std::make_shared<RMSNorm>(s.hidden, 1e-6)});
  };
  m.batch = [](const ModelSizes& s, DType dtype, Device device, Generator& gen) {
    const Tensor x = input_requiring_grad(s, dtype, device, gen);
    const Tensor r = input_requiring_grad(s, dtype, device, gen);
    return Batch{x, {r}, mse_against_random_target(x.shape(), dtype, device, gen)};
  };
  return m;
}

examples::CharLMConfig charlm_config(const ModelSizes& s) {
  examples::CharLMConfig c;
  c.context = s.extra.at("context"), c.embed = s.extra.at("embed"), c.hidden = s.hidden, c.blocks = s.extra.at("blocks");
  return c;
}

// The ranges are charlm's own flags'.
BenchModel charlm() {
  const examples::CharLMConfig d;
  BenchModel m{"charlm", d.hidden,
               {{"context", "charlm: characters of context", d.context, {1, 32}},
                {"embed", "charlm: embedding width of a character", d.embed, {1, 1024}},
                {"blocks", "charlm: residual blocks", d.blocks, {0, 32}}},
               nullptr, nullptr, nullptr};
  m.build = [](const ModelSizes& s, Generator& gen) { return examples::charlm_model(charlm_config(s), gen); };
  m.batch = [](const ModelSizes& s, DType dtype, Device device, Generator& gen) {
    return examples::charlm_batch(charlm_config(s), s.tokens, dtype, device, gen);
  };
  return m;
}

examples::ClassifyConfig classify_config(const ModelSizes& s) {
  return {s.extra.at("features"), s.hidden, s.extra.at("classes")};
}

BenchModel classify() {
  const examples::ClassifyConfig d;
  BenchModel m{"classify", d.hidden,
               {{"features", "classify: feature columns", d.features, {1, 1 << 16}},
                {"classes", "classify: classes", d.classes, {1, 1 << 16}}},
               nullptr, nullptr, nullptr};
  m.build = [](const ModelSizes& s, Generator& gen) { return examples::classify_model(classify_config(s), gen); };
  m.batch = [](const ModelSizes& s, DType dtype, Device device, Generator& gen) {
    return examples::classify_batch(classify_config(s), s.tokens, dtype, device, gen);
  };
  return m;
}

// classify at MNIST's size: Linear 784->1024, GELU, Linear 1024->1024, GELU, Linear 1024->10 on a
// batch of 128, cross entropy against random labels. Its sizes are fixed but for --tokens and
// --hidden; it is the model of the training-step target (--step).
BenchModel mnist_mlp() {
  BenchModel m{"mnist_mlp", 1024, {}, nullptr, nullptr, nullptr};
  m.default_tokens = 128;
  m.build = [](const ModelSizes& s, Generator& gen) { return examples::classify_model({784, s.hidden, 10}, gen); };
  m.batch = [](const ModelSizes& s, DType dtype, Device device, Generator& gen) {
    return examples::classify_batch({784, s.hidden, 10}, s.tokens, dtype, device, gen);
  };
  return m;
}

BenchModel custom_fusion() {
  BenchModel m{"custom_fusion", examples::CustomFusionConfig{}.width, {}, nullptr, nullptr,
               examples::register_square_fusions};
  m.build = [](const ModelSizes& s, Generator& gen) { return examples::custom_fusion_model({s.hidden}, gen); };
  m.batch = [](const ModelSizes& s, DType dtype, Device device, Generator& gen) {
    examples::Batch b = examples::custom_fusion_batch({s.hidden}, s.tokens, dtype, device, gen);
    b.loss = mse_against_random_target({s.tokens, s.hidden}, dtype, device, gen);  // the model keeps the width
    return b;
  };
  return m;
}

examples::GptConfig gpt_config(const ModelSizes& s, const std::string& arch) {
  examples::GptConfig c;
  c.width = s.hidden, c.context = s.extra.at("gpt-context"), c.heads = s.extra.at("gpt-heads"), c.arch = arch;
  if (s.extra.count("layers")) c.layers = s.extra.at("layers");
  return c;
}

// The batch of the models built from examples::GptConfig: windows of --gpt-context tokens.
constexpr int64_t kGptWindows = 32;

// The size flags of the models built from examples::GptConfig (gpt, llama, llama_block).
std::vector<SizeFlag> gpt_size_flags() {
  const examples::GptConfig d;
  return {{"gpt-context", "gpt, llama and llama_block: characters of context", d.context, {1, 4096}},
          {"layers", "gpt and llama: transformer blocks", d.layers, {1, 64}},
          {"gpt-heads", "gpt, llama and llama_block: attention heads (--hidden must be a multiple)", d.heads, {1, 1024}}};
}

// gpt's model (examples/models.h) with the block `arch`: GPT-2's, or the llama preset's (ending in
// its loss, the fused LM head), on --tokens windows of --gpt-context characters each.
BenchModel gpt(const std::string& arch) {
  BenchModel m{arch == "llama" ? "llama" : "gpt", examples::GptConfig{}.width, gpt_size_flags(), nullptr, nullptr,
               nullptr};
  m.default_tokens = kGptWindows;
  m.build = [arch](const ModelSizes& s, Generator& gen) { return examples::gpt_model(gpt_config(s, arch), gen); };
  m.batch = [arch](const ModelSizes& s, DType dtype, Device device, Generator& gen) {
    return examples::gpt_batch(gpt_config(s, arch), s.tokens, dtype, device, gen);
  };
  return m;
}

// One block of the llama preset (examples::llama_block: RMSNorm, qkv, RotaryEmbedding, GQA
// attention, projection, residual; RMSNorm, gate | up, SwiGLU, down, residual) on x [--tokens,
// --gpt-context, --hidden] requiring grad; loss: mean squared error against a random target.
BenchModel llama_block() {
  std::vector<SizeFlag> flags = gpt_size_flags();
  flags.erase(flags.begin() + 1);  // one block: no --layers
  BenchModel m{"llama_block", examples::GptConfig{}.width, flags, nullptr, nullptr, nullptr};
  m.default_tokens = kGptWindows;
  m.build = [](const ModelSizes& s, Generator& gen) {
    return Sequential(examples::llama_block(gpt_config(s, "llama"), 0, gen));
  };
  m.batch = [](const ModelSizes& s, DType dtype, Device device, Generator& gen) {
    Tensor x = randn({s.tokens, s.extra.at("gpt-context"), s.hidden}, dtype, &gen).to(device);
    x.set_requires_grad(true);
    return Batch{x, {}, mse_against_random_target(x.shape(), dtype, device, gen)};
  };
  return m;
}

// The attention bench's heads: --heads over --kv-heads (0: as many as --heads).
AttentionHeads bench_heads(const ModelSizes& s) {
  const int64_t heads = s.extra.at("heads"), kv_heads = s.extra.at("kv-heads");
  check(s.hidden % heads == 0, "bench: --hidden ", s.hidden, " is not a multiple of --heads ", heads);
  check(kv_heads == 0 || heads % kv_heads == 0, "bench: --kv-heads ", kv_heads, " does not divide --heads ", heads);
  return {heads, kv_heads == 0 ? heads : kv_heads};
}

// Attention alone on qkv [batch, tokens, (heads + 2 kv_heads) head_dim] (requiring grad): with
// --rope 1 a RotaryEmbedding first, then AttentionScores, Softmax, Dropout(0), AttentionValues, qkv
// on a channel; --hidden is heads x head_dim.
BenchModel attention() {
  BenchModel m{"attention", 256,
               {{"batch", "attention: sequences per batch (--tokens is their length)", 4, {1, 1 << 16}},
                {"heads", "attention: heads (--hidden must be a multiple)", 4, {1, 1024}},
                {"kv-heads", "attention: key and value heads, a divisor of --heads (0: --heads)", 0, {0, 1024}},
                {"rope", "attention: 1 to rotate q and k first (RotaryEmbedding), 0 not", 0, {0, 1}},
                {"causal", "attention: 1 for causal, 0 for not", 1, {0, 1}}},
               nullptr, nullptr, nullptr};
  m.build = [](const ModelSizes& s, Generator&) {
    const AttentionHeads heads = bench_heads(s);
    Sequential seq;
    if (s.extra.at("rope") == 1) seq.append(std::make_shared<RotaryEmbedding>(heads));
    seq.append(attention_ops(heads, s.extra.at("causal") == 1, 0.0, 0));
    return seq;
  };
  m.batch = [](const ModelSizes& s, DType dtype, Device device, Generator& gen) {
    const AttentionHeads heads = bench_heads(s);
    const int64_t qkv_width = heads.columns() * (s.hidden / heads.heads);
    Tensor qkv = randn({s.extra.at("batch"), s.tokens, qkv_width}, dtype, &gen).to(device);
    qkv.set_requires_grad(true);
    return Batch{qkv, {}, mse_against_random_target({s.extra.at("batch"), s.tokens, s.hidden}, dtype, device, gen)};
  };
  return m;
}

// A language model's head and loss: Linear [vocab, hidden] without bias, then CrossEntropy against
// random next tokens (the extra input), on x [tokens, hidden] requiring grad, as the llama preset
// ends. Fused, LMHeadCrossEntropy never holds the [tokens, vocab] logits.
BenchModel lm_head() {
  BenchModel m{"lm_head", 256, {{"vocab", "lm_head: vocabulary size (the Linear's outputs)", 8192, {1, 1 << 20}}},
               nullptr, nullptr, nullptr};
  m.default_tokens = 8192;
  m.build = [](const ModelSizes& s, Generator& gen) {
    return Sequential({std::make_shared<Linear>(s.hidden, s.extra.at("vocab"), &gen), std::make_shared<CrossEntropy>()});
  };
  m.batch = [](const ModelSizes& s, DType dtype, Device device, Generator& gen) {
    const Tensor next = randint({s.tokens}, s.extra.at("vocab"), &gen).to(device);
    return Batch{input_requiring_grad(s, dtype, device, gen), {next}, [](const SequentialOutput& out) { return out.output; }};
  };
  return m;
}

// A mixture of experts' MLP (ops/basic/moe_mlp.h: Router, MoEPermute, GroupedLinear, SwiGLU,
// GroupedLinear, MoEUnpermute) of --experts SwiGLU experts of --expert-hidden, --top-k each, on x
// [tokens, hidden] requiring grad; loss: mean squared error against a random target.
// --router-skew Z (in tenths) skews the experts' load as a Zipf law of exponent Z / 10: x's first
// feature is 1 on every row and expert e's router weight on it is -(Z / 10) ln(e + 1), so that
// e's routing probability is scaled by (e + 1)^(-Z / 10) (0: the experts are alike).
// It registers RoutedGroupedMlpKeepingActivation, the built-in fusion keeping the GLU's output
// instead of recomputing it, after the built-ins: it takes the layer where
// FUSELAB_DISABLE_FUSIONS=RoutedGroupedMlp,GroupedMlp.
BenchModel moe_block() {
  BenchModel m{"moe_block", 256,
               {{"experts", "moe_block: experts", 8, {1, 1 << 12}},
                {"top-k", "moe_block: experts per token", 2, {1, 1 << 12}},
                {"expert-hidden", "moe_block: each expert's hidden width", 512, {1, 1 << 16}},
                {"router-skew", "moe_block: Zipf exponent of the experts' load, in tenths (0: even)", 0, {0, 100}}},
               nullptr, nullptr, nullptr};
  m.build = [](const ModelSizes& s, Generator& gen) {
    const MoEMlpConfig config{s.hidden, s.extra.at("expert-hidden"), s.extra.at("experts"), s.extra.at("top-k")};
    check(config.top_k <= config.experts, "bench: --top-k ", config.top_k, " is more than --experts ", config.experts);
    const MoEMlp moe = moe_mlp(config, "moe", gen);
    if (const int64_t skew = s.extra.at("router-skew"); skew > 0) {
      std::vector<double> w = moe.router->weight().to(DType::Float64).to_vector<double>();  // [experts, hidden]
      for (int64_t e = 0; e < config.experts; ++e) w[size_t(e * s.hidden)] = -double(skew) / 10 * std::log(double(e + 1));
      moe.router->weight().set_data(from_vector<double>(w, {config.experts, s.hidden}).to(DType::Float32));
    }
    return Sequential(moe.ops);
  };
  m.batch = [](const ModelSizes& s, DType dtype, Device device, Generator& gen) {
    Tensor x = input_requiring_grad(s, dtype, device, gen);
    if (s.extra.at("router-skew") > 0) {
      std::vector<double> v = x.to(Device::cpu()).to(DType::Float64).to_vector<double>();
      for (int64_t r = 0; r < s.tokens; ++r) v[size_t(r * s.hidden)] = 1;
      x = from_vector<double>(v, x.shape()).to(dtype).to(device);
      x.set_requires_grad(true);
    }
    return Batch{x, {}, mse_against_random_target(x.shape(), dtype, device, gen)};
  };
  m.register_fusions = [] {
    const FusionDefinition keeping = routed_grouped_mlp_fusion(/*recompute_activation=*/false);
    register_forward_backward_fusion(keeping.name, keeping.fn);
  };
  return m;
}

}  // namespace

const std::vector<BenchModel>& bench_models() {
  static const std::vector<BenchModel> models{mlp_block(),    norm_block(), charlm(), classify(),  mnist_mlp(),
                                              custom_fusion(), gpt("gpt2"),  gpt("llama"), llama_block(), attention(), lm_head(),
                                              moe_block()};
  return models;
}

const BenchModel* find_bench_model(const std::string& name) {
  for (const BenchModel& m : bench_models()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

}  // namespace fuselab::bench
