// Text generation from a language model with a KV cache (examples/kv_cache.h): the prompt in one
// forward (prefill), then one forward of one token per generated token (decode), each token drawn
// from the model's next-token distribution as SamplingSettings say.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "examples/text_tokens.h"
#include "fuser/sequential.h"
#include "tensor/random.h"

namespace fuselab::examples {

// How a token is drawn from the logits: softmax(logits / temperature) over the top_k most likely
// tokens (0: all), then over the fewest most likely whose probabilities sum to at least top_p
// (1: all), renormalized. Temperature 0 takes the most likely token.
struct SamplingSettings {
  double temperature = 0.8;
  int64_t top_k = 0;
  double top_p = 1;
};

// The index drawn from `logits` (gen is not used at temperature 0).
int64_t sample_index(const std::vector<float>& logits, const SamplingSettings& settings, Generator& gen);

struct GenerationStats {
  int64_t prefill_tokens = 0, decoded_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;  // forwards only, sampling included
};

// Generates up to max_tokens ids after `prompt` (at least one id) with `model` (its logits; a
// model ending in its loss is run without it), handing each to on_token, which returns false to
// stop. The model sees at most `context` tokens (its KV cache's capacity; head_dim is its
// attention's head size): a longer prompt keeps its last `context`, and a full cache starts again
// from the last context / 2 tokens (a window that slides by half a context).
GenerationStats generate(Sequential& model, const std::vector<int64_t>& prompt, int64_t max_tokens, int64_t context,
                         int64_t head_dim, const SamplingSettings& settings, Generator& gen, Device device,
                         const std::function<bool(int64_t)>& on_token);

// `length` tokens after `prompt` at `temperature` (generate's, with the whole vocabulary), as text.
std::string sample_text(Sequential& model, const TextTokenizer& tokenizer, const std::string& prompt, int64_t length,
                        int64_t context, int64_t head_dim, double temperature, Generator& gen, Device device);

}  // namespace fuselab::examples
