// Generates text from a checkpoint of //examples:gpt (GPT-2's block or the llama preset's) with a
// KV cache (examples/kv_cache.h): the prompt in one forward, then one forward per token,
// streamed to stdout as it is drawn. The model is rebuilt from the settings the checkpoint
// recorded (examples/gpt_flags.h) and its tokenizer (characters or BPE pieces).
//
//   bazel-bin/examples/gpt --checkpoint=DIR ...            then
//   bazel-bin/examples/generate --checkpoint=DIR [--prompt=TEXT, else stdin] [--max-tokens=N]
//       [--temperature=T] [--top-k=K] [--top-p=P] [--seed=S] [--stop=TEXT] [--device=cpu|cuda]
//
// Prefill and decode speeds (tokens/s) go to stderr, so stdout is the text alone.
#include <cstdio>
#include <iostream>
#include <iterator>

#include "examples/generation.h"
#include "examples/gpt_checkpoint.h"
#include "examples/training_run.h"

using namespace fuselab;
using namespace fuselab::examples;

namespace {

struct Config {
  std::string checkpoint, prompt, stop, device = "cpu";
  bool prompt_given = false;
  int64_t max_tokens = 200, seed = 0;
  SamplingSettings sampling;
};

int run(const Config& c) {
  RunFlags device_flag;
  device_flag.device = c.device;
  const Device device = run_device("generate", device_flag);
  GptCheckpoint checkpoint = load_gpt_checkpoint(c.checkpoint);
  const GptConfig& model_config = checkpoint.config;
  const TextTokenizer& tokenizer = checkpoint.tokenizer;
  Sequential& model = checkpoint.model;
  model.to(device);

  const std::string prompt = c.prompt_given ? c.prompt : std::string(std::istreambuf_iterator<char>(std::cin), {});
  check(!prompt.empty(), "generate: the prompt is empty; give --prompt=TEXT or text on stdin (the model has no "
        "start token)");
  const std::vector<int64_t> prompt_ids = tokenizer.encode(prompt).to_vector<int64_t>();
  // A character model reads a character it never saw in training as its unknown token: say so.
  const std::string read = tokenizer.decode(prompt_ids);
  if (read != prompt) {
    std::fprintf(stderr, "generate: warning: the model's vocabulary lacks some of the prompt's characters; it reads "
                 "\"%s\"\n", read.c_str());
  }
  std::string text;
  Generator gen(uint64_t(c.seed));
  const GenerationStats stats = generate(
      model, prompt_ids, c.max_tokens, model_config.context,
      model_config.width / model_config.heads, c.sampling, gen, device, [&](int64_t id) {
        const std::string piece = tokenizer.decode({id});
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        text += piece;
        return c.stop.empty() || text.find(c.stop) == std::string::npos;
      });
  std::printf("\n");
  std::fflush(stdout);  // the text ends before the speeds on stderr
  std::fprintf(stderr, "prefill: %lld tokens in %.1f ms (%.0f tokens/s); decode: %lld tokens in %.2f s (%.0f tokens/s)\n",
               (long long)stats.prefill_tokens, stats.prefill_seconds * 1e3,
               double(stats.prefill_tokens) / stats.prefill_seconds, (long long)stats.decoded_tokens,
               stats.decode_seconds, stats.decoded_tokens > 0 ? double(stats.decoded_tokens) / stats.decode_seconds : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return main_reporting_errors(argc, argv, [&] {
    Flags flags("generate", "Generates text from a checkpoint of gpt, with a KV cache.");
    Config c;
    flags.add("checkpoint", c.checkpoint, "the folder gpt --checkpoint saved to (it reads DIR/gpt.safetensors)");
    flags.add("prompt", c.prompt, "the text to go on from (not given: all of stdin)");
    flags.add("max-tokens", c.max_tokens, "tokens to generate at most", {1, 1'000'000});
    flags.add("temperature", c.sampling.temperature, "sampling temperature (0: always the most likely character)",
              {0, 100});
    flags.add("top-k", c.sampling.top_k, "draw among the k most likely characters only (0: all)", {0, 1 << 20});
    flags.add("top-p", c.sampling.top_p, "draw among the fewest most likely characters whose probability sums to p",
              {1e-9, 1});
    flags.add("seed", c.seed, "the sampling generator's seed", {0, INT64_MAX});
    flags.add("stop", c.stop, "stop at the token that completes this text in the generated text (printed)");
    flags.add("device", c.device, "cpu or cuda");
    if (!flags.parse(argc, argv)) return 0;
    check(!c.checkpoint.empty(), "generate: --checkpoint=DIR is required (a folder gpt --checkpoint saved to)");
    c.prompt_given = flags.given("prompt");
    return run(c);
  });
}
