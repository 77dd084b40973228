// The models the examples train, one builder per model with a config whose defaults are the
// example's, so that an example and //tools:bench build the same Sequential. Beside each builder,
// a batch maker: random inputs of the kinds the model takes, and the loss its example trains
// with, against random targets, for timing the model without its data set.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fuser/sequential.h"
#include "ops/basic/attention.h"
#include "ops/basic/router.h"
#include "optim/optimizer.h"
#include "tensor/random.h"
#include "tensor/tensor.h"

namespace fuselab::examples {

// Random inputs for one call of a model, and its example's loss of that call's output (a
// bfloat16 output is cast to float32 for it, as the losses take float32 or float64).
struct Batch {
  Tensor input;
  std::vector<Tensor> extra_inputs;                     // the targets of a model that ends in its loss
  std::function<Tensor(const SequentialOutput&)> loss;  // against the batch's random targets
};

// charlm (examples/charlm.cc): the embeddings of the previous `context` characters, concatenated,
// through an MLP with residual blocks, giving the logits of the next character:
//   Embedding, Reshape, Linear, Bias, GELU,
//   blocks x [MakeExtraOutput, RMSNorm, Linear, Bias, GELU, Linear, Bias, AddExtraInput],
//   RMSNorm, Linear, Bias
// Each block's residual goes from its MakeExtraOutput to its AddExtraInput through a channel, so
// the model takes no extra inputs.
struct CharLMConfig {
  int64_t vocab = 27;  // '.' then a-z
  int64_t context = 8, embed = 24, hidden = 256, blocks = 2;
};
Sequential charlm_model(const CharLMConfig& config, Generator& gen);
// Character ids [rows, context] (int64, of any dtype asked); cross entropy against random next ids.
Batch charlm_batch(const CharLMConfig& config, int64_t rows, DType dtype, Device device, Generator& gen);

// gpt (examples/gpt.cc): a GPT (Radford et al., 2019) over [batch, T] token ids,
// T <= context, giving the logits of the next token at every position, [batch, T, vocab]:
//   Embedding, PositionEmbedding,
//   layers x [MakeExtraOutput, LayerNorm, Linear, Bias (width -> 3 width: qkv),
//             AttentionScores(heads, causal), Softmax, Dropout, AttentionValues(heads),
//             Linear, Bias, AddExtraInput,
//             MakeExtraOutput, LayerNorm, Linear, Bias, GELU (width -> hidden), Linear, Bias, AddExtraInput],
//   LayerNorm, Linear (width -> vocab, no bias, as GPT-2's)
// where hidden is mlp_hidden, 4 width unless set. Pre-norm blocks: each residual goes through a channel from its MakeExtraOutput to its
// AddExtraInput, and qkv from AttentionScores to AttentionValues, so the model takes no extra
// inputs. GPT-2's initialization: every weight and both embeddings N(0, 0.02^2), the two
// projections that end a residual branch N(0, (0.02 / sqrt(2 layers))^2), biases 0, LayerNorms 1
// and 0. The vocabulary's default is the fortunes corpus's (docs/training_programs.md).
//
// With arch "llama", the block of Llama (Touvron et al., 2023) as Hugging Face writes it, no
// position embedding and no biases:
//   Embedding,
//   layers x [MakeExtraOutput, RMSNorm, Linear (width -> (heads + 2 kv_heads) head_dim: qkv),
//             RotaryEmbedding(heads, theta), AttentionScores, Softmax, Dropout, AttentionValues,
//             Linear, AddExtraInput,
//             MakeExtraOutput, RMSNorm, Linear (width -> 2 hidden: gate | up), SwiGLU, Linear, AddExtraInput],
//   RMSNorm, Linear (width -> vocab), CrossEntropy
// where hidden is mlp_hidden, 8/3 width rounded up to a multiple of 64 (llama_hidden) unless set,
// and the same GPT-2 initialization (RMSNorm gains 1). The llama model ends in its loss: it takes the next tokens
// [batch, T] as its one extra input and gives the mean cross entropy, so that LMHeadCrossEntropy
// fuses its head and loss and never holds the [batch T, vocab] logits (language_model.h calls it,
// and takes the logits for sampling from the model without its last op).
// A llama with experts hands back, as extra outputs for each MoE block in order, its router's
// load-balancing loss and z-loss and its experts' row counts (gpt_moe_outputs reads them).
struct GptConfig {
  int64_t vocab = 112;
  int64_t context = 64, width = 128, layers = 3, heads = 4;
  double dropout = 0;  // on the attention probabilities
  std::string arch = "gpt2";  // "gpt2" or "llama"
  int64_t kv_heads = 0;       // llama: key and value heads, a divisor of heads (0: heads / 2 when even)
  double rope_theta = 10000;  // llama: the rotary embedding's base
  bool tie_embeddings = false;  // the LM head's weight is the token embedding's table
  int64_t mlp_hidden = 0;  // the MLP's hidden width (0: the preset's, 4 width or llama_hidden(width))
  double norm_eps = 0;     // the norms' epsilon (0: the preset's, 1e-5 for LayerNorm, 1e-6 for RMSNorm)
  int64_t experts = 0;     // llama: experts of a mixture-of-experts MLP (0: the dense MLP)
  int64_t top_k = 2;       // llama with experts: experts per token
  int64_t moe_every = 1;   // llama with experts: every moe_every-th block's MLP is the experts' (1: all)
  double capacity_factor = 0;  // llama with experts: MoEPermute's (0: dropless)
  std::string router = "softmax";  // llama with experts: the Router's score, gpt_router_score's name
};
// The Router's score a name gives: softmax (over the k chosen, Mixtral's), softmax-all (over all
// experts, not renormalized: Switch's, Qwen-MoE's) or sigmoid; another name throws.
RouterScore gpt_router_score(const std::string& name);
// With experts, block l's MLP is a mixture of experts (ops/basic/moe_mlp.h) when (l + 1) is a
// multiple of moe_every (every block, or every other from the second as Switch); each expert is a
// SwiGLU MLP of mlp_hidden, initialized as the dense MLP, the router N(0, 0.02^2).
bool gpt_moe_layer(const GptConfig& config, int64_t layer);
// The MLP's hidden width and the norms' epsilon of a config, its presets' where it sets none.
int64_t gpt_mlp_hidden(const GptConfig& config);
double gpt_norm_eps(const GptConfig& config);
Sequential gpt_model(const GptConfig& config, Generator& gen);
// One block of the llama model (the bracketed ops above), its residual channels named by `layer`.
std::vector<std::shared_ptr<BasicOp>> llama_block(const GptConfig& config, int64_t layer, Generator& gen);
// The width of a llama MLP's hidden layer for a model of width `width`.
int64_t llama_hidden(int64_t width);
// The attention heads of a config: kv_heads, or the preset's (heads / 2 for llama when heads is
// even, else heads); gpt_kv_heads gives the count without checking that it divides heads.
AttentionHeads gpt_attention_heads(const GptConfig& config);
int64_t gpt_kv_heads(const GptConfig& config);
// Model FLOPs of one token's (or row's) forward and backward, as PaLM's appendix and llm.c count
// them: 6 per weight of a matrix multiply (the Linear weights: 2 forward, 4 backward), and for a GPT
// 12 layers width context more for the attention's two products (scores and values).
// An expert's weights count once for each of the top_k experts a token goes to, the router's once.
double matmul_flops_per_token(const Sequential& model);
double gpt_flops_per_token(const Sequential& model, const GptConfig& config);
// GPT's weight decay split, as minGPT's: group 0, the weight matrices (the Linears', the routers'
// and the experts' GroupedLinears'), decays by `weight_decay`; group 1, biases, LayerNorm gains and shifts and the token and position
// embeddings, does not (they set offsets and scales, which decay would only pull toward 0). A tied
// token embedding is the LM head's weight matrix, so it decays.
std::vector<ParamGroup> gpt_decay_groups(const Sequential& model, double weight_decay);

// What a llama with experts hands back for one call, by MoE block.
struct MoEOutputs {
  std::vector<Tensor> balance_losses, z_losses;        // scalars, differentiable
  std::vector<std::vector<int64_t>> expert_counts;     // rows each expert received
};
MoEOutputs gpt_moe_outputs(const SequentialOutput& output);
// Token ids [rows, context] (int64, of any dtype asked); cross entropy of the logits viewed as
// [rows context, vocab] against random next ids, as the example trains (for llama, the next ids
// [rows, context] are the extra input and the loss is the model's output).
Batch gpt_batch(const GptConfig& config, int64_t rows, DType dtype, Device device, Generator& gen);

// classify (examples/classify.cc): an MLP classifier of two hidden layers,
//   Linear, Bias, GELU, Linear, Bias, GELU, Linear, Bias  ->  logits
// The defaults are the shape of examples/data/blobs.csv: 4 features, 3 classes.
struct ClassifyConfig {
  int64_t features = 4, hidden = 64, classes = 3;
};
Sequential classify_model(const ClassifyConfig& config, Generator& gen);
// Standard normal features [rows, features], as the example's standardized columns; cross
// entropy against random labels.
Batch classify_batch(const ClassifyConfig& config, int64_t rows, DType dtype, Device device, Generator& gen);

// custom_fusion (examples/custom_fusion.cc): Linear(width, width) without bias, Square,
// ConstantScale(scale). Only the user fusions of square_fusions.h fuse it.
struct CustomFusionConfig {
  int64_t width = 8;
  double scale = 0.5;
};
Sequential custom_fusion_model(const CustomFusionConfig& config, Generator& gen);
// x standard normal [rows, width], requiring its grad as the example's does; the sum of the
// outputs, as the example's backward starts from.
Batch custom_fusion_batch(const CustomFusionConfig& config, int64_t rows, DType dtype, Device device, Generator& gen);

}  // namespace fuselab::examples
