// A character-level GPT (Radford et al., 2019) trained on Debian's fortunes: token and position
// embeddings, pre-norm transformer blocks of causal self-attention and a GELU MLP, and a final
// LayerNorm and LM head, predicting every next character of a window at once.
//
//   bazel run -c opt //examples:gpt -- [--steps=N] [--seed=S] [--batch=B] [--context=T]
//       [--layers=L] [--heads=H] [--width=C] [--lr=LR] [--dropout=P] [--accumulate=N] [--no-fusion]
//       [--device=cpu|cuda]
//       [--checkpoint=DIR [--resume] [--checkpoint-every=N]] [--json=FILE] [--loss-log=FILE]
//       [--stop-after=N] (stop early, as if interrupted; --resume continues) [--sample=N]
//
// --help lists every flag with its default and its range.
//
// The whole model is one Sequential of fusible ops (examples/models.h's gpt_model, which
// //tools:bench times too), so the fuser sees each block's Linear+Bias+residual add, Linear+Bias+
// GELU and the attention chain AttentionScores, Softmax, Dropout, AttentionValues:
//   Embedding, PositionEmbedding,
//   layers x [pre-norm causal self-attention + residual, pre-norm MLP + residual],
//   LayerNorm, Linear, Bias  ->  logits [batch, T, vocab], then cross_entropy over [batch T, vocab].
//
// Training: AdamW with decoupled weight decay on the Linear weight matrices only (none on biases,
// LayerNorms and the embeddings, as minGPT), a linear warm-up then a cosine decay of the learning
// rate to a tenth, and the grad norm clipped to 1. With --accumulate N each step's batch runs as N
// micro-batches of batch / N windows, each loss scaled by 1 / N, their grads summed before the one
// step: the same step as on the whole batch, in less memory. The data are [batch, T + 1] windows of
// the training text (data/window_sampler.h); the validation loss is over every validation token,
// in windows of T, and the unigram baseline is the corpus's (data/text_corpus.h).
//
// With --checkpoint the state is saved every --checkpoint-every steps and at the end of the run;
// --resume continues from that checkpoint, which must exist, and the run then matches an
// uninterrupted one exactly: the window sampler is replayed to the checkpoint's step and each
// Dropout skips the masks the steps before it drew (one per micro-batch).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "autograd/functional.h"
#include "data/fortune_reader.h"
#include "data/text_corpus.h"
#include "data/window_sampler.h"
#include "examples/flags.h"
#include "examples/models.h"
#include "examples/output_file.h"
#include "fuser/sequential.h"
#include "ops/basic/dropout.h"
#include "ops/basic/linear.h"
#include "kernels/cuda/device_api.h"
#include "optim/adamw.h"
#include "optim/anomaly.h"
#include "optim/checkpoint.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"

using namespace fuselab;

namespace {

struct Config {
  examples::GptConfig model;  // context, width, layers, heads and dropout (vocab: the corpus's)
  int64_t steps, stop_after, batch, accumulate, checkpoint_every, sample, val_tokens;
  double lr, weight_decay, temperature;
  uint64_t seed;
  bool fusion, resume, detect_anomaly;
  std::string corpus, checkpoint, json, loss_log, device;
};

// GPT's weight decay split, as minGPT's: the Linear weight matrices decay; biases, LayerNorm gains
// and shifts and the token and position embeddings do not (they set offsets and scales, which
// decay would only pull toward 0).
std::vector<ParamGroup> decay_groups(const Sequential& model, double weight_decay) {
  ParamGroup decayed{{}, weight_decay}, not_decayed{{}, 0.0};
  for (const auto& op : model.ops()) {
    auto* linear = dynamic_cast<Linear*>(op.get());
    for (const Tensor& p : op->parameters()) {
      (linear && p.same(linear->weight()) ? decayed : not_decayed).params.push_back(p);
    }
  }
  return {decayed, not_decayed};
}

// Windows of T + 1 tokens, int64 [rows, T + 1], as the model's inputs, their first T tokens
// [rows, T], and its targets, the T after each input, [rows T].
std::pair<Tensor, Tensor> inputs_and_targets(const Tensor& windows) {
  const int64_t rows = windows.size(0), t = windows.size(1) - 1;
  const auto all = windows.to_vector<int64_t>();
  std::vector<int64_t> ids, next;
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = all.begin() + r * (t + 1);
    ids.insert(ids.end(), row, row + t);
    next.insert(next.end(), row + 1, row + t + 1);
  }
  return {from_vector<int64_t>(ids, {rows, t}), from_vector<int64_t>(next, {rows * t})};
}

// The mean cross entropy over every token of `tokens` after the first, each predicted from the
// tokens before it in its window of at most `context` (the windows do not overlap).
double evaluate(Sequential& model, const Tensor& tokens, int64_t context, int64_t vocab, Device device) {
  NoGradGuard no_grad;
  model.eval();
  const int64_t targets = tokens.size(0) - 1, windows = targets / context, rows_per_call = 64;
  double total = 0;
  auto add = [&](const Tensor& window) {
    const auto [ids, next] = inputs_and_targets(window);
    const Tensor loss = cross_entropy(reshape(model(ids.to(device)), {-1, vocab}), next.to(device));
    total += loss.item() * double(next.numel());
  };
  // Window w holds tokens [w T, w T + T]: T inputs and the T targets after them.
  std::vector<int64_t> all = tokens.to_vector<int64_t>();
  for (int64_t w = 0; w < windows; w += rows_per_call) {
    const int64_t rows = std::min(rows_per_call, windows - w);
    std::vector<int64_t> window;
    for (int64_t r = 0; r < rows; ++r) {
      const auto begin = all.begin() + (w + r) * context;
      window.insert(window.end(), begin, begin + context + 1);
    }
    add(from_vector<int64_t>(window, {rows, context + 1}));
  }
  if (const int64_t rest = targets - windows * context; rest > 0) {
    add(from_vector<int64_t>(std::vector<int64_t>(all.end() - rest - 1, all.end()), {1, rest + 1}));
  }
  model.train();
  return total / double(targets);
}

// `length` characters after `prompt`, each drawn from softmax(logits / temperature) of the last
// `context` characters (the most likely one at temperature 0).
std::string sample_text(Sequential& model, const CharVocabulary& vocab, const std::string& prompt, int64_t length,
                        int64_t context, double temperature, Generator& gen, Device device) {
  NoGradGuard no_grad;
  model.eval();
  std::vector<int64_t> ids = vocab.encode(prompt).to_vector<int64_t>();
  std::vector<int64_t> generated;
  const int64_t v = vocab.size();
  for (int64_t i = 0; i < length; ++i) {
    const int64_t t = std::min<int64_t>(context, int64_t(ids.size()));
    const std::vector<int64_t> window(ids.end() - t, ids.end());
    const Tensor logits = model(from_vector<int64_t>(window, {1, t}).to(device)).to(Device::cpu());
    const auto all = logits.view({t, v}).slice(t - 1, t).to_vector<float>();
    int64_t next = int64_t(std::max_element(all.begin(), all.end()) - all.begin());
    if (temperature > 0) {
      const float top = all[size_t(next)];
      std::vector<double> weights(all.size());
      double total = 0;
      for (size_t j = 0; j < all.size(); ++j) total += weights[j] = std::exp((all[j] - top) / temperature);
      double u = gen.uniform() * total;
      for (size_t j = 0; j < all.size(); ++j) {
        if ((u -= weights[j]) < 0) {
          next = int64_t(j);
          break;
        }
      }
    }
    ids.push_back(next);
    generated.push_back(next);
  }
  model.train();
  return vocab.decode(generated);
}

void print_progress(int64_t step, int64_t total, double loss, double tokens_per_s, double seconds_left) {
  const int width = 30, filled = int(width * step / total);
  std::printf("\r[%s%s] step %lld/%lld  loss %.4f  %.1fk tok/s  %3.0fs left ", std::string(filled, '#').c_str(),
              std::string(width - filled, '.').c_str(), (long long)step, (long long)total, loss, tokens_per_s / 1000,
              seconds_left);
  std::fflush(stdout);
}

int run(Config c) {
  check(c.device == "cpu" || c.device == "cuda", "gpt: --device must be cpu or cuda, got ", c.device);
  check(c.device == "cpu" || kernels::cuda::device_count() > 0, "gpt: --device cuda, but this machine has no CUDA device");
  check(c.batch % c.accumulate == 0, "gpt: --batch=", c.batch, " does not split evenly into --accumulate=",
        c.accumulate, " micro-batches");
  check(c.model.width % c.model.heads == 0, "gpt: --width=", c.model.width, " does not split evenly over --heads=",
        c.model.heads);
  const Device device = c.device == "cpu" ? Device::cpu() : Device::cuda(0);
  const TextCorpus corpus = load_text_corpus(fortune_files(c.corpus));
  check(corpus.train.size(0) >= c.model.context + c.batch, "gpt: the training text of ", c.corpus, " has ",
        corpus.train.size(0), " tokens, too few for --batch=", c.batch, " windows of --context=", c.model.context);
  check(corpus.validation.size(0) >= 2, "gpt: the validation text of ", c.corpus, " has fewer than 2 tokens");
  c.model.vocab = corpus.vocab.size();

  Generator gen(c.seed);
  Sequential model = examples::gpt_model(c.model, gen);
  model.set_fusion_switches(c.fusion);
  model.to(device);
  int64_t parameters = 0;
  for (const Tensor& p : model.parameters()) parameters += p.numel();
  const std::vector<ParamGroup> optimizer_groups = decay_groups(model, c.weight_decay);
  AdamW optimizer(optimizer_groups, {c.lr, 0.9, 0.95, 1e-8});
  WindowSampler batches(corpus.train, c.batch, c.model.context, c.seed + 1);
  std::printf("gpt: %lld train / %lld validation tokens, vocabulary %lld; %lld layers of width %lld, %lld heads, "
              "context %lld, %lld parameters; batch %lld, fusion %s\n",
              (long long)corpus.train.size(0), (long long)corpus.validation.size(0), (long long)c.model.vocab,
              (long long)c.model.layers, (long long)c.model.width, (long long)c.model.heads, (long long)c.model.context,
              (long long)parameters, (long long)c.batch, c.fusion ? "on" : "off");
  std::printf("AdamW: weight decay %g on %zu of %zu parameter tensors (the Linear weight matrices)\n", c.weight_decay,
              optimizer_groups[0].params.size(), model.parameters().size());
  std::printf("%s\n", model.describe().c_str());

  const std::string checkpoint_file = c.checkpoint.empty() ? "" : c.checkpoint + "/gpt.safetensors";
  int64_t start = 0;
  if (c.resume) {
    check(std::filesystem::exists(checkpoint_file), "gpt: --resume, but there is no checkpoint ", checkpoint_file);
    start = load_checkpoint(checkpoint_file, model.named_parameters(), optimizer);
    check(start <= c.steps, "gpt: checkpoint ", checkpoint_file, " is at step ", start, ", past --steps=", c.steps);
    // Both are deterministic: replay the sampler's windows, and skip the mask each Dropout drew
    // in each micro-batch of each training step before this one.
    for (int64_t s = 0; s < start; ++s) batches.next();
    for (const auto& op : model.ops()) {
      if (auto* dropout = dynamic_cast<Dropout*>(op.get())) dropout->skip_masks(start * c.accumulate);
    }
    std::printf("resumed from %s at step %lld\n", checkpoint_file.c_str(), (long long)start);
  }
  auto save = [&](int64_t step) {
    if (!checkpoint_file.empty()) save_checkpoint(checkpoint_file, model.named_parameters(), optimizer, step);
  };
  // Opened before training, so an unwritable path fails now rather than after the run.
  examples::OutputFile loss_log("loss-log", c.loss_log, std::ios::app);
  examples::OutputFile json("json", c.json);
  if (!c.checkpoint.empty()) std::filesystem::create_directories(c.checkpoint);

  const int64_t tokens_per_step = c.batch * c.model.context, v = c.model.vocab;
  const int64_t warmup = std::max<int64_t>(1, c.steps / 20);
  const auto begin = std::chrono::steady_clock::now();
  double tokens_per_s = 0, last_loss = 0;
  const int64_t stop = std::min(c.steps, c.stop_after);
  for (int64_t step = start; step < stop; ++step) {
    const Tensor window = batches.next();  // [batch, T + 1]
    optimizer.set_lr_scale(cosine_with_warmup(step, warmup, c.steps, 1.0, 0.1));  // times --lr
    optimizer.zero_grad();
    last_loss = 0;
    const int64_t rows = c.batch / c.accumulate;
    for (int64_t micro = 0; micro < c.accumulate; ++micro) {  // the grads add up over the micro-batches
      const auto [ids, next] = inputs_and_targets(window.slice(micro * rows, (micro + 1) * rows));
      const Tensor logits = model(ids.to(device));
      const Tensor loss = cross_entropy(reshape(logits, {-1, v}), next.to(device));
      backward(scale(loss, 1.0 / double(c.accumulate)));
      last_loss += loss.item() / double(c.accumulate);
    }
    if (c.detect_anomaly) check_finite_grads("gpt", model.named_parameters(), step + 1);
    const double grad_norm = clip_grad_norm(model.parameters(), 1.0);
    check(std::isfinite(grad_norm), "gpt: the grad norm is ", grad_norm, " at step ", step + 1,
          "; stopping (--detect-anomaly names the parameter)");
    optimizer.step();
    check_finite_loss("gpt", last_loss, step + 1);
    loss_log.write(step + 1, ' ', last_loss, '\n');
    if ((step + 1) % c.checkpoint_every == 0 || step + 1 == stop) save(step + 1);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    tokens_per_s = double((step + 1 - start) * tokens_per_step) / seconds;
    if ((step + 1) % 10 == 0 || step + 1 == stop) {
      print_progress(step + 1, c.steps, last_loss, tokens_per_s,
                     seconds / double(step + 1 - start) * double(c.steps - step - 1));
    }
  }
  std::printf("\n");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  if (stop < c.steps) {
    std::printf("stopped after step %lld of %lld (--stop-after)\n", (long long)stop, (long long)c.steps);
    return 0;
  }

  const Tensor validation =
      c.val_tokens > 0 ? corpus.validation.slice(0, std::min(c.val_tokens, corpus.validation.size(0))) : corpus.validation;
  const double val_loss = evaluate(model, validation, c.model.context, v, device);
  const size_t peak_bytes = CachingAllocator::of(device).stats().peak_bytes_in_use;
  // A prefix's baseline is scored over the same targets as the model.
  const double baseline = validation.size(0) == corpus.validation.size(0)
                              ? corpus.unigram_baseline
                              : unigram_cross_entropy(corpus.train, validation.slice(1, validation.size(0)), v);
  std::printf("validation loss %.4f (unigram baseline %.4f) after %lld steps, %.1f s of training, over %lld tokens\n",
              val_loss, baseline, (long long)c.steps, seconds, (long long)validation.size(0) - 1);
  if (c.sample > 0) {
    Generator sampler(c.seed + 2);
    std::printf("sampled text (temperature %g):\n%%\n%s\n", c.temperature,
                sample_text(model, corpus.vocab, "%\n", c.sample, c.model.context, c.temperature, sampler, device).c_str());
  }
  json.write("{\"val_loss\": ", val_loss, ", \"unigram_loss\": ", baseline, ", \"train_loss\": ", last_loss,
             ", \"steps\": ", c.steps, ", \"tokens_per_s\": ", tokens_per_s, ", \"steps_per_s\": ",
             double(c.steps - start) / seconds, ", \"peak_bytes\": ", peak_bytes, ", \"parameters\": ", parameters,
             ", \"fused\": ", c.fusion ? "true" : "false", "}\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    examples::Flags flags("gpt", "Trains a character-level GPT on Debian's fortunes.");
    Config c{};
    c.steps = 1500, c.batch = 32, c.accumulate = 1, c.checkpoint_every = 500, c.sample = 300;
    c.lr = 2e-3, c.weight_decay = 0.01, c.temperature = 0.8;
    c.corpus = kFortuneFolder, c.device = "cpu";
    int64_t seed = 0;
    bool no_fusion = false;
    flags.add("steps", c.steps, "training steps", {1, 1'000'000'000});
    flags.add("stop-after", c.stop_after, "stop after this many steps, as an interrupted run would", {1, 1'000'000'000});
    flags.show("stop-after", "= --steps", "[1, --steps]");  // checked once --steps is known
    flags.add("batch", c.batch, "windows per step", {1, 1 << 16});
    flags.add("context", c.model.context, "characters the model attends over (the window length)", {1, 4096});
    flags.add("layers", c.model.layers, "transformer blocks", {0, 64});
    flags.add("heads", c.model.heads, "attention heads (they split --width)", {1, 256});
    flags.add("width", c.model.width, "model width (embedding and residual stream)", {1, 8192});
    flags.add("dropout", c.model.dropout, "dropout probability on the attention probabilities", {0, 0.9});
    flags.add("lr", c.lr, "peak AdamW learning rate (cosine schedule with warm-up)", {1e-9, 10});
    flags.add("weight-decay", c.weight_decay, "AdamW's decoupled weight decay of the Linear weight matrices (none "
              "on biases, LayerNorms and embeddings)", {0, 1});
    flags.add("accumulate", c.accumulate, "micro-batches per step, their grads summed (they split --batch)",
              {1, 1 << 16});
    flags.add("seed", seed, "seed of the data order, the initialization, dropout and the sampling", {0, INT64_MAX});
    flags.add("no-fusion", no_fusion, "run the model unfused");
    flags.add("device", c.device, "cpu or cuda");
    flags.add("corpus", c.corpus, "folder of fortune files (Debian's fortunes package)");
    flags.add("checkpoint", c.checkpoint, "folder to save the training state in (none: no checkpoints)");
    flags.add("checkpoint-every", c.checkpoint_every, "steps between checkpoints", {1, 1'000'000'000});
    flags.add("resume", c.resume, "continue from the state in --checkpoint");
    flags.add("json", c.json, "file for the final report, as JSON");
    flags.add("loss-log", c.loss_log, "file for the loss of every step");
    flags.add("val-tokens", c.val_tokens, "validation tokens to score, from the start (0: all)", {0, INT64_MAX});
    flags.add("sample", c.sample, "characters of text to sample at the end", {0, 1'000'000});
    flags.add("temperature", c.temperature, "sampling temperature (0: always the most likely character)", {0, 100});
    flags.add("detect-anomaly", c.detect_anomaly, "check every grad for non-finite values, naming the parameter");
    if (!flags.parse(argc, argv)) return 0;
    if (!flags.given("stop-after")) c.stop_after = c.steps;
    examples::check_in_range("stop-after", c.stop_after, {1, c.steps});
    check(c.val_tokens != 1, "--val-tokens: 1 token has nothing to predict; give 0 (all of them) or at least 2");
    c.seed = uint64_t(seed);
    c.fusion = !no_fusion;
    check(!c.resume || !c.checkpoint.empty(), "gpt: --resume needs --checkpoint=DIR to resume from");
    return run(c);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nerror: %s\n", e.what());
    return 1;
  }
}
