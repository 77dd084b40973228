#include "examples/gpt_flags.h"

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
  flags.add("context", model.context, "characters the model attends over (the window length)", {1, 4096});
  flags.add("layers", model.layers, "transformer blocks", {0, 64});
  flags.add("heads", model.heads, "attention heads (they split --width)", {1, 256});
  flags.add("width", model.width, "model width (embedding and residual stream)", {1, 8192});
  flags.add("dropout", model.dropout, "dropout probability on the attention probabilities", {0, 0.9});
}

void check_gpt_model_flags(const GptConfig& model) {
  check(model.arch == "gpt2" || model.arch == "llama", "gpt: --arch=", model.arch, " is not gpt2 or llama");
  check(model.width % model.heads == 0, "gpt: --width=", model.width, " does not split evenly over --heads=",
        model.heads);
  if (model.arch != "llama") {
    check(model.kv_heads == 0 && model.rope_theta == 10000, "gpt: --kv-heads and --rope-theta are llama's; add "
          "--arch=llama");
    return;
  }
  check(model.kv_heads == 0 || model.heads % model.kv_heads == 0, "gpt: --kv-heads=", model.kv_heads,
        " does not divide --heads=", model.heads);
  check(model.width / model.heads % 2 == 0, "gpt: --arch=llama rotates halves of each head, but --width=",
        model.width, " over --heads=", model.heads, " gives heads of odd size ", model.width / model.heads);
}

GptConfig gpt_model_of_checkpoint(const Metadata& settings, const std::string& path) {
  Flags flags("checkpoint", "");
  GptConfig model;
  add_gpt_model_flags(flags, model);
  std::vector<std::string> args{"checkpoint"};
  for (const char* name : {"arch", "kv-heads", "rope-theta", "tie-embeddings", "context", "layers", "heads", "width",
                           "dropout"}) {
    const auto it = settings.find(std::string("--") + name);
    check(it != settings.end(), "checkpoint ", path, " does not record --", name, ": not a checkpoint of gpt");
    args.push_back(it->first + "=" + it->second);
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  try {
    flags.parse(int(argv.size()), argv.data());
    check_gpt_model_flags(model);
  } catch (const Error& e) {
    fail("checkpoint ", path, ": ", e.what());
  }
  return model;
}

}  // namespace fuselab::examples
