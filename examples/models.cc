// The example models' builders and batch makers (see models.h).
#include "examples/models.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "autograd/functional.h"
#include "examples/square_fusions.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/attention.h"
#include "ops/basic/bias.h"
#include "ops/basic/constant_scale.h"
#include "ops/basic/cross_entropy.h"
#include "ops/basic/embedding.h"
#include "ops/basic/gated_linear_unit.h"
#include "ops/basic/layernorm.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/moe_mlp.h"
#include "ops/basic/position_embedding.h"
#include "ops/basic/reshape.h"
#include "ops/basic/rmsnorm.h"
#include "ops/basic/rotary_embedding.h"
#include "tensor/factories.h"

namespace fuselab::examples {
namespace {

// The losses take float32 or float64, so a bfloat16 output is cast to float32 first (as
// docs/bfloat16.md does); targets are made in the loss's dtype.
DType loss_dtype(DType dtype) { return dtype == DType::BFloat16 ? DType::Float32 : dtype; }
Tensor loss_input(const Tensor& output) { return cast(output, loss_dtype(output.dtype())); }

}  // namespace

Sequential charlm_model(const CharLMConfig& c, Generator& gen) {
  Sequential model;
  model.append(std::make_shared<Embedding>(c.vocab, c.embed, &gen));
  model.append(std::make_shared<Reshape>(Shape{-1, c.context * c.embed}));
  model.append(linear_with_bias(c.context * c.embed, c.hidden, &gen)).append(std::make_shared<GELU>());
  for (int64_t b = 0; b < c.blocks; ++b) {
    const std::string channel = "residual" + std::to_string(b);
    auto branch = std::make_shared<MakeExtraOutput>();
    branch->set_extra_output_channel(0, channel, /*to_caller=*/false);
    auto add = std::make_shared<AddExtraInput>();
    add->set_extra_input_channel(0, channel);
    model.append(branch).append(std::make_shared<RMSNorm>(c.hidden));
    model.append(linear_with_bias(c.hidden, 2 * c.hidden, &gen)).append(std::make_shared<GELU>());
    model.append(linear_with_bias(2 * c.hidden, c.hidden, &gen)).append(add);
  }
  model.append(std::make_shared<RMSNorm>(c.hidden)).append(linear_with_bias(c.hidden, c.vocab, &gen));
  return model;
}

Batch charlm_batch(const CharLMConfig& c, int64_t rows, DType, Device device, Generator& gen) {
  const Tensor contexts = randint({rows, c.context}, c.vocab, &gen).to(device);
  const Tensor next = randint({rows}, c.vocab, &gen).to(device);
  return {contexts, {}, [next](const SequentialOutput& out) { return cross_entropy(loss_input(out.output), next); }};
}

namespace {

// A Linear without bias (weight N(0, std^2)), as Llama's and GPT-2's LM head.
std::shared_ptr<Linear> linear_without_bias(int64_t in, int64_t out, double std, Generator& gen) {
  auto linear = std::make_shared<Linear>(in, out, &gen);
  linear->weight().set_data(normal({out, in}, 0, std, DType::Float32, &gen));
  return linear;
}

// A Linear (weight N(0, std^2)) and a zero Bias, as GPT-2 initializes them.
std::vector<std::shared_ptr<BasicOp>> gpt_linear(int64_t in, int64_t out, double std, Generator& gen) {
  return {linear_without_bias(in, out, std, gen), std::make_shared<Bias>(out)};
}

// The ends of one residual branch: x goes on and into the channel, and comes back added.
std::pair<std::shared_ptr<BasicOp>, std::shared_ptr<BasicOp>> residual(const std::string& channel) {
  auto branch = std::make_shared<MakeExtraOutput>();
  branch->set_extra_output_channel(0, channel, /*to_caller=*/false);
  auto add = std::make_shared<AddExtraInput>();
  add->set_extra_input_channel(0, channel);
  return {branch, add};
}

constexpr double kStd = 0.02;

// The std of the two projections that end a residual branch.
double projection_std(const GptConfig& c) { return kStd / std::sqrt(2.0 * double(std::max<int64_t>(c.layers, 1))); }

Sequential llama_model(const GptConfig& c, Generator& gen) {
  Sequential model;
  auto tokens = std::make_shared<Embedding>(c.vocab, c.width, &gen);
  tokens->table().set_data(normal({c.vocab, c.width}, 0, kStd, DType::Float32, &gen));
  model.append(tokens);
  for (int64_t l = 0; l < c.layers; ++l) model.append(llama_block(c, l, gen));
  auto head = linear_without_bias(c.width, c.vocab, kStd, gen);
  if (c.tie_embeddings) head->share_parameter("weight", tokens->table());
  model.append(std::make_shared<RMSNorm>(c.width, gpt_norm_eps(c))).append(head);
  model.append(std::make_shared<CrossEntropy>());
  return model;
}

}  // namespace

std::vector<std::shared_ptr<BasicOp>> llama_block(const GptConfig& c, int64_t layer, Generator& gen) {
  const AttentionHeads heads = gpt_attention_heads(c);
  const int64_t head_dim = c.width / c.heads, hidden = gpt_mlp_hidden(c);
  const std::string n = std::to_string(layer);
  auto [attention_in, attention_out] = residual("attention_residual" + n);
  std::vector<std::shared_ptr<BasicOp>> block{attention_in, std::make_shared<RMSNorm>(c.width, gpt_norm_eps(c)),
                                              linear_without_bias(c.width, heads.columns() * head_dim, kStd, gen),
                                              std::make_shared<RotaryEmbedding>(heads, c.rope_theta)};
  const auto attention = attention_ops(heads, /*causal=*/true, c.dropout, gen.next_u64(), "qkv" + n);
  block.insert(block.end(), attention.begin(), attention.end());
  block.insert(block.end(), {linear_without_bias(c.width, c.width, projection_std(c), gen), attention_out});

  auto [mlp_in, mlp_out] = residual("mlp_residual" + n);
  block.insert(block.end(), {mlp_in, std::make_shared<RMSNorm>(c.width, gpt_norm_eps(c))});
  if (gpt_moe_layer(c, layer)) {
    const MoEMlp moe = moe_mlp({c.width, hidden, c.experts, c.top_k, gpt_router_score(c.router), /*losses=*/true,
                                /*expert_counts=*/true, c.capacity_factor}, "moe" + n, gen);
    moe.router->weight().set_data(normal({c.experts, c.width}, 0, kStd, DType::Float32, &gen));
    moe.up->weight().set_data(normal({c.experts, 2 * hidden, c.width}, 0, kStd, DType::Float32, &gen));
    moe.down->weight().set_data(normal({c.experts, c.width, hidden}, 0, projection_std(c), DType::Float32, &gen));
    block.insert(block.end(), moe.ops.begin(), moe.ops.end());
  } else {
    block.insert(block.end(), {linear_without_bias(c.width, 2 * hidden, kStd, gen), std::make_shared<SwiGLU>(),
                               linear_without_bias(hidden, c.width, projection_std(c), gen)});
  }
  block.push_back(mlp_out);
  return block;
}

RouterScore gpt_router_score(const std::string& name) {
  if (name == "softmax") return RouterScore::Softmax;
  if (name == "softmax-all") return RouterScore::SoftmaxAll;
  check(name == "sigmoid", "gpt: --router=", name, " is not softmax, softmax-all or sigmoid");
  return RouterScore::Sigmoid;
}

bool gpt_moe_layer(const GptConfig& c, int64_t layer) {
  return c.arch == "llama" && c.experts > 0 && (layer + 1) % c.moe_every == 0;
}

int64_t gpt_kv_heads(const GptConfig& c) {
  if (c.kv_heads > 0) return c.kv_heads;
  return c.arch == "llama" && c.heads % 2 == 0 ? c.heads / 2 : c.heads;
}

AttentionHeads gpt_attention_heads(const GptConfig& c) { return {c.heads, gpt_kv_heads(c)}; }

int64_t gpt_mlp_hidden(const GptConfig& c) {
  if (c.mlp_hidden > 0) return c.mlp_hidden;
  return c.arch == "llama" ? llama_hidden(c.width) : 4 * c.width;
}

double gpt_norm_eps(const GptConfig& c) {
  if (c.norm_eps > 0) return c.norm_eps;
  return c.arch == "llama" ? 1e-6 : 1e-5;
}

int64_t llama_hidden(int64_t width) {
  constexpr int64_t kMultiple = 64;
  const int64_t hidden = (8 * width + 2) / 3;  // 8/3 width, rounded
  return (hidden + kMultiple - 1) / kMultiple * kMultiple;
}

Sequential gpt_model(const GptConfig& c, Generator& gen) {
  check(c.heads > 0 && c.width % c.heads == 0, "gpt_model: width ", c.width, " must split evenly over ", c.heads,
        " heads");
  check(c.arch == "gpt2" || c.arch == "llama", "gpt_model: arch '", c.arch, "' is not gpt2 or llama");
  if (c.arch == "llama") return llama_model(c, gen);
  Sequential model;
  auto tokens = std::make_shared<Embedding>(c.vocab, c.width, &gen);
  tokens->table().set_data(normal({c.vocab, c.width}, 0, kStd, DType::Float32, &gen));
  model.append(tokens).append(std::make_shared<PositionEmbedding>(c.context, c.width, kStd, &gen));
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string n = std::to_string(l);
    auto [attention_in, attention_out] = residual("attention_residual" + n);
    model.append(attention_in).append(std::make_shared<LayerNorm>(c.width, gpt_norm_eps(c)));
    model.append(gpt_linear(c.width, 3 * c.width, kStd, gen));
    model.append(attention_ops(c.heads, /*causal=*/true, c.dropout, gen.next_u64(), "qkv" + n));
    model.append(gpt_linear(c.width, c.width, projection_std(c), gen)).append(attention_out);

    auto [mlp_in, mlp_out] = residual("mlp_residual" + n);
    model.append(mlp_in).append(std::make_shared<LayerNorm>(c.width, gpt_norm_eps(c)));
    model.append(gpt_linear(c.width, gpt_mlp_hidden(c), kStd, gen)).append(std::make_shared<GELU>());
    model.append(gpt_linear(gpt_mlp_hidden(c), c.width, projection_std(c), gen)).append(mlp_out);
  }
  auto head = linear_without_bias(c.width, c.vocab, kStd, gen);
  if (c.tie_embeddings) head->share_parameter("weight", tokens->table());
  model.append(std::make_shared<LayerNorm>(c.width, gpt_norm_eps(c))).append(head);
  return model;
}

double matmul_flops_per_token(const Sequential& model) {
  double matmul_weights = 0;
  int64_t top_k = 1;  // the rows of a token an expert's weights see: the last router's k
  for (const auto& op : model.ops()) {
    if (auto* linear = dynamic_cast<Linear*>(op.get())) matmul_weights += double(linear->weight().numel());
    if (auto* router = dynamic_cast<Router*>(op.get())) {
      matmul_weights += double(router->weight().numel());
      top_k = router->top_k();
    }
    if (auto* grouped = dynamic_cast<GroupedLinear*>(op.get())) {
      matmul_weights += double(grouped->weight().numel() / grouped->groups() * top_k);
    }
  }
  return 6 * matmul_weights;
}

double gpt_flops_per_token(const Sequential& model, const GptConfig& c) {
  return matmul_flops_per_token(model) + 12.0 * double(c.layers * c.width * c.context);
}

std::vector<ParamGroup> gpt_decay_groups(const Sequential& model, double weight_decay) {
  ParamGroup decayed{{}, weight_decay}, not_decayed{{}, 0.0};
  for (const auto& op : model.ops()) {
    if (auto* linear = dynamic_cast<Linear*>(op.get())) decayed.params.push_back(linear->weight());
    if (auto* grouped = dynamic_cast<GroupedLinear*>(op.get())) decayed.params.push_back(grouped->weight());
    if (auto* router = dynamic_cast<Router*>(op.get())) decayed.params.push_back(router->weight());
  }
  for (const Tensor& p : model.parameters()) {
    const bool matrix = std::any_of(decayed.params.begin(), decayed.params.end(), [&](const Tensor& w) { return w.same(p); });
    if (!matrix) not_decayed.params.push_back(p);
  }
  return {decayed, not_decayed};
}

Batch gpt_batch(const GptConfig& c, int64_t rows, DType, Device device, Generator& gen) {
  const Tensor ids = randint({rows, c.context}, c.vocab, &gen).to(device);
  const Tensor next = randint({rows * c.context}, c.vocab, &gen).to(device);
  const int64_t vocab = c.vocab;
  if (c.arch == "llama") {  // the model ends in its loss, the targets its extra input
    return {ids, {next.view({rows, c.context})}, [](const SequentialOutput& out) { return out.output; }};
  }
  return {ids, {}, [next, vocab](const SequentialOutput& out) {
            return cross_entropy(reshape(loss_input(out.output), {-1, vocab}), next);
          }};
}

MoEOutputs gpt_moe_outputs(const SequentialOutput& output) {
  constexpr size_t kPerBlock = 3;  // the load-balancing loss, the z-loss, the counts
  check(output.extra_outputs.size() % kPerBlock == 0, "gpt_moe_outputs: ", output.extra_outputs.size(),
        " extra outputs are not ", kPerBlock, " for each MoE block");
  MoEOutputs moe;
  for (size_t i = 0; i < output.extra_outputs.size(); i += kPerBlock) {
    moe.balance_losses.push_back(output.extra_outputs[i]);
    moe.z_losses.push_back(output.extra_outputs[i + 1]);
    moe.expert_counts.push_back(output.extra_outputs[i + 2].to_vector<int64_t>());
  }
  return moe;
}

Sequential classify_model(const ClassifyConfig& c, Generator& gen) {
  Sequential model;
  model.append(linear_with_bias(c.features, c.hidden, &gen)).append(std::make_shared<GELU>());
  model.append(linear_with_bias(c.hidden, c.hidden, &gen)).append(std::make_shared<GELU>());
  model.append(linear_with_bias(c.hidden, c.classes, &gen));
  return model;
}

Batch classify_batch(const ClassifyConfig& c, int64_t rows, DType dtype, Device device, Generator& gen) {
  const Tensor features = randn({rows, c.features}, dtype, &gen).to(device);
  const Tensor labels = randint({rows}, c.classes, &gen).to(device);
  return {features, {}, [labels](const SequentialOutput& out) { return cross_entropy(loss_input(out.output), labels); }};
}

Sequential custom_fusion_model(const CustomFusionConfig& c, Generator& gen) {
  return Sequential({std::make_shared<Linear>(c.width, c.width, &gen), std::make_shared<Square>(),
                     std::make_shared<ConstantScale>(c.scale)});
}

Batch custom_fusion_batch(const CustomFusionConfig& c, int64_t rows, DType dtype, Device device, Generator& gen) {
  Tensor x = randn({rows, c.width}, dtype, &gen).to(device);
  x.set_requires_grad(true);
  return {x, {}, [](const SequentialOutput& out) { return sum(out.output); }};
}

}  // namespace fuselab::examples
