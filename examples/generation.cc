#include "examples/generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "autograd/grad_mode.h"
#include "examples/kv_cache.h"
#include "examples/language_model.h"
#include "tensor/factories.h"

namespace fuselab::examples {

int64_t sample_index(const std::vector<float>& logits, const SamplingSettings& s, Generator& gen) {
  check(!logits.empty(), "sample_index: no logits");
  check(s.temperature >= 0, "sample_index: temperature ", s.temperature, " is below 0");
  check(s.top_k >= 0, "sample_index: top_k ", s.top_k, " is below 0 (0: all tokens)");
  check(s.top_p > 0 && s.top_p <= 1, "sample_index: top_p ", s.top_p, " is not in (0, 1]");
  for (size_t i = 0; i < logits.size(); ++i) {
    check(std::isfinite(logits[i]), "sample_index: logit ", i, " of ", logits.size(), " is ", logits[i],
          " (a model that diverged?)");
  }
  std::vector<int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
  if (s.temperature <= 0) return order[0];
  // Probabilities of the tokens in order of likelihood, cut to the top k and then to the top p.
  const size_t k = s.top_k > 0 ? std::min(size_t(s.top_k), order.size()) : order.size();
  std::vector<double> p(k);
  double total = 0;
  for (size_t i = 0; i < k; ++i) {
    total += p[i] = std::exp((logits[size_t(order[i])] - logits[size_t(order[0])]) / s.temperature);
  }
  size_t kept = 0;
  for (double mass = 0; kept < k && mass < s.top_p * total;) mass += p[kept++];
  double u = gen.uniform() * std::accumulate(p.begin(), p.begin() + long(kept), 0.0);
  for (size_t i = 0; i < kept; ++i) {
    if ((u -= p[i]) < 0) return order[i];
  }
  return order[kept - 1];
}

GenerationStats generate(Sequential& model, const std::vector<int64_t>& prompt, int64_t max_tokens, int64_t context,
                         int64_t head_dim, const SamplingSettings& settings, Generator& gen, Device device,
                         const std::function<bool(int64_t)>& on_token) {
  check(!prompt.empty(), "generate: the prompt needs at least one token (the model has no start token)");
  NoGradGuard no_grad;
  model.eval();
  Sequential without_loss = ends_in_loss(model) ? model.slice(0, -1) : Sequential();
  Sequential& logits_of = ends_in_loss(model) ? without_loss : model;
  KVCache cache(logits_of, 1, context, head_dim, model.parameters().at(0).dtype(), device);
  std::vector<int64_t> ids = prompt;
  std::vector<int64_t> pending(ids.end() - std::min<int64_t>(context, int64_t(ids.size())), ids.end());
  GenerationStats stats;
  using Clock = std::chrono::steady_clock;
  for (int64_t i = 0; i < max_tokens; ++i) {
    if (cache.length() + int64_t(pending.size()) > context) {  // full: slide by half a context
      cache.clear();
      pending.assign(ids.end() - std::max<int64_t>(1, context / 2), ids.end());
    }
    const auto start = Clock::now();
    const int64_t t = int64_t(pending.size());
    const Tensor logits = cache.forward(logits_of, from_vector<int64_t>(pending, {1, t}).to(device));
    const int64_t vocab = logits.size(-1);
    const Tensor last = logits.to(Device::cpu()).view({t, vocab}).slice(t - 1, t).to(DType::Float32);
    const int64_t next = sample_index(last.to_vector<float>(), settings, gen);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    (i == 0 ? stats.prefill_seconds : stats.decode_seconds) += seconds;
    (i == 0 ? stats.prefill_tokens : stats.decoded_tokens) += i == 0 ? t : 1;
    ids.push_back(next);
    pending = {next};
    if (!on_token(next)) break;
  }
  model.train();
  return stats;
}

std::string sample_text(Sequential& model, const TextTokenizer& tokenizer, const std::string& prompt, int64_t length,
                        int64_t context, int64_t head_dim, double temperature, Generator& gen, Device device) {
  check(!prompt.empty(), "sample_text: the prompt needs at least one character (the model has no start token)");
  std::vector<int64_t> generated;
  generate(model, tokenizer.encode(prompt).to_vector<int64_t>(), length, context, head_dim, {temperature, 0, 1}, gen,
           device, [&](int64_t id) {
             generated.push_back(id);
             return true;
           });
  return tokenizer.decode(generated);
}

}  // namespace fuselab::examples
