#include "examples/gpt_flags.h"

#include <algorithm>
#include <cstdlib>
#include <iomanip>
#include <sstream>
#include <vector>

#include "tensor/error.h"

namespace fuselab::examples {

void add_gpt_model_flags(Flags& flags, GptConfig& model) {
  flags.add("arch", model.arch, "the block: gpt2 (LayerNorm, learned positions, GELU MLP) or llama (RMSNorm, "
            "rotary positions, grouped-query attention, SwiGLU MLP, no biases)");
  flags.add("kv-heads", model.kv_heads, "llama: key and value heads, a divisor of --heads (0: --heads / 2 "
            "when even, else --heads)", {0, 256});
  flags.add("rope-theta", model.rope_theta, "llama: the rotary embedding's base", {1, 1e9});
  flags.add("tie-embeddings", model.tie_embeddings, "the LM head's weight is the token embedding's table "
            "(one parameter, both grads added into it)");
  flags.add("context", model.context, "tokens the model attends over (the window length)", {1, 1 << 20});
  flags.add("layers", model.layers, "transformer blocks", {0, 1024});
  flags.add("heads", model.heads, "attention heads (they split --width)", {1, 1024});
  flags.add("width", model.width, "model width (embedding and residual stream)", {1, 1 << 16});
  flags.add("dropout", model.dropout, "dropout probability on the attention probabilities", {0, 0.9});
  flags.add("mlp-hidden", model.mlp_hidden, "the MLP's hidden width (0: 4 --width for gpt2, 8/3 --width rounded "
            "up to a multiple of 64 for llama)", {0, 1 << 20});
  flags.add("norm-eps", model.norm_eps, "the norms' epsilon (0: 1e-5 for gpt2's LayerNorm, 1e-6 for llama's "
            "RMSNorm)", {0, 1});
  flags.add("experts", model.experts, "llama: experts of a mixture-of-experts MLP, each a SwiGLU MLP of "
            "--mlp-hidden (0: the dense MLP)", {0, 1 << 16});
  flags.add("top-k", model.top_k, "llama with --experts: experts each token goes to", {1, 1 << 16});
  flags.add("moe-every", model.moe_every, "llama with --experts: every N-th block's MLP is the experts' (1: every "
            "block, 2: every other)", {1, 1024});
  flags.add("capacity-factor", model.capacity_factor, "llama with --experts: each expert takes at most this times "
            "its even share of a call's token copies, dropping the rest (0: dropless)", {0, 1 << 16});
  flags.add("router", model.router, "llama with --experts: the routing weights of a token's experts: softmax "
            "(over the k chosen, Mixtral's), softmax-all (the softmax over all experts, not renormalized: Switch's, "
            "Qwen-MoE's; with --top-k=1 the main loss trains the router too) or sigmoid");
}

void refuse_without_experts(const Flags& flags, const GptConfig& model, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (model.experts == 0 && flags.given(name)) fail("gpt: --", name, " chooses among experts: give --experts");
  }
}

void check_gpt_model_flags(const Flags& flags, const GptConfig& model) {
  refuse_without_experts(flags, model, {"top-k", "moe-every", "capacity-factor", "router"});
  check(model.arch == "gpt2" || model.arch == "llama", "gpt: --arch=", model.arch, " is not gpt2 or llama");
  check(model.width % model.heads == 0, "gpt: --width=", model.width, " does not split evenly over --heads=",
        model.heads);
  if (model.arch != "llama") {
    check(model.kv_heads == 0 && model.rope_theta == 10000 && model.experts == 0, "gpt: --kv-heads, --rope-theta "
          "and --experts are llama's; add --arch=llama");
    return;
  }
  gpt_router_score(model.router);  // throws for an unknown name
  check(model.experts == 0 || model.top_k <= model.experts, "gpt: --top-k=", model.top_k, " is more than --experts=",
        model.experts);
  check(model.experts == 0 || model.moe_every <= model.layers, "gpt: --moe-every=",
        model.moe_every, " leaves none of the --layers=", model.layers, " blocks with experts");
  check(model.kv_heads == 0 || model.heads % model.kv_heads == 0, "gpt: --kv-heads=", model.kv_heads,
        " does not divide --heads=", model.heads);
  check(model.width / model.heads % 2 == 0, "gpt: --arch=llama rotates halves of each head, but --width=",
        model.width, " over --heads=", model.heads, " gives heads of odd size ", model.width / model.heads);
}

namespace {

// The fewest digits that read back as the value.
std::string number(double value) {
  for (int digits = 15;; digits = 17) {
    std::ostringstream text;
    text << std::setprecision(digits) << value;
    if (digits == 17 || std::strtod(text.str().c_str(), nullptr) == value) return text.str();
  }
}

// The settings of every model; the sizes the presets leave to a rule are recorded as the rule
// gives them, so that a model saved with the rule's value and one that set the same value read the same.
Metadata dense_model_settings(const GptConfig& m) {
  const int64_t kv_heads = m.arch == "llama" ? gpt_kv_heads(m) : m.kv_heads;
  return {{"--arch", m.arch}, {"--kv-heads", number(kv_heads)}, {"--rope-theta", number(m.rope_theta)},
          {"--tie-embeddings", number(m.tie_embeddings)}, {"--context", number(m.context)},
          {"--layers", number(m.layers)}, {"--heads", number(m.heads)}, {"--width", number(m.width)},
          {"--dropout", number(m.dropout)}, {"--mlp-hidden", number(gpt_mlp_hidden(m))},
          {"--norm-eps", number(gpt_norm_eps(m))}};
}

// Recorded only for a model with experts, so that a dense model's checkpoint reads without them.
Metadata moe_settings(const GptConfig& m) {
  if (m.experts == 0) return {};
  return {{"--experts", number(m.experts)},
          {"--top-k", number(m.top_k)},
          {"--moe-every", number(m.moe_every)},
          {"--capacity-factor", number(m.capacity_factor)},
          {"--router", m.router}};
}

}  // namespace

Metadata gpt_model_settings(const GptConfig& m) {
  Metadata settings = dense_model_settings(m);
  settings.merge(moe_settings(m));
  return settings;
}

GptConfig gpt_model_of_checkpoint(const Metadata& settings, const std::string& path) {
  Flags flags("checkpoint", "");
  GptConfig model;
  add_gpt_model_flags(flags, model);
  std::vector<std::string> args{"checkpoint"};
  for (const auto& [flag, unused] : dense_model_settings(model)) {
    const auto it = settings.find(flag);
    check(it != settings.end(), "checkpoint ", path, " does not record ", flag, ": not a checkpoint of gpt");
    args.push_back(it->first + "=" + it->second);
  }
  GptConfig with_experts;
  with_experts.experts = 1;
  for (const auto& [flag, unused] : moe_settings(with_experts)) {
    if (const auto it = settings.find(flag); it != settings.end()) args.push_back(it->first + "=" + it->second);
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  try {
    flags.parse(int(argv.size()), argv.data());
    check_gpt_model_flags(flags, model);
  } catch (const Error& e) {
    fail("checkpoint ", path, ": ", e.what());
  }
  return model;
}

}  // namespace fuselab::examples
