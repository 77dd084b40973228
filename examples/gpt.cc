// A GPT (Radford et al., 2019), or with --arch=llama a Llama-style decoder (RMSNorm, rotary
// positions, grouped-query attention, SwiGLU; with --experts a Mixtral-style mixture of experts as
// its MLP), trained on Debian's fortunes in characters or, with
// --tokenizer=bpe, in subword pieces; the model is examples/models.h's gpt_model, one Sequential of
// fusible ops that //tools:bench times too.
//
//   bazel run -c opt //examples:gpt -- [--arch=gpt2|llama] [--batch=B] [--context=T] [--layers=L]
//       [--heads=H] [--kv-heads=K] [--width=C] [--tie-embeddings] [--dropout=P] [--accumulate=N]
//       [--experts=E --top-k=K --moe-every=N --capacity-factor=F --router=softmax|softmax-all|sigmoid
//        --balance-loss=A --z-loss=B]
//       [--tokenizer=char|bpe] [--vocab-size=V] [--dtype=float32|bfloat16|float64] [--sample=N]
//       and the flags every training program has (examples/training_run.h: --steps, --lr, --seed,
//       --device, --checkpoint, --resume, --json, --recompute, ...)
//
// --help lists every flag with its default and its range; docs/training_programs.md says more.
// Training: AdamW with weight decay on the Linear weight matrices only (as minGPT), a linear
// warm-up then a cosine decay of the learning rate to a tenth, and the grad norm clipped to 1.
// With --accumulate N each step's batch runs as N micro-batches of batch / N windows, each loss
// scaled by 1 / N, their grads summed before the one step: the same step in less memory.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <utility>
#include <vector>

#include "autograd/functional.h"
#include "data/fortune_reader.h"
#include "data/text_corpus.h"
#include "data/window_sampler.h"
#include "examples/generation.h"
#include "examples/gpt_checkpoint.h"
#include "examples/gpt_flags.h"
#include "examples/language_model.h"
#include "examples/models.h"
#include "examples/text_tokens.h"
#include "examples/training_run.h"
#include "optim/adamw.h"
#include "tensor/allocator.h"

using namespace fuselab;
using namespace fuselab::examples;

namespace {

struct Config {
  GptConfig model;  // context, width, layers, heads and dropout (vocab: the corpus's)
  RunFlags run;
  int64_t batch = 32, accumulate = 1, sample = 300, val_tokens = 0, vocab_size = 1024;
  double weight_decay = 0.01, temperature = 0.8;
  double balance_loss = 0.01, z_loss = 0.001;  // with --experts: the routers' auxiliary losses' weights
  std::string corpus = kFortuneFolder, tokenizer = "char", token_cache = default_token_cache();
  std::string dtype = "float32";
};

int64_t parameter_count(const Sequential& model) {
  int64_t count = 0;
  for (const Tensor& p : model.parameters()) count += p.numel();
  return count;
}

// The experts' load of a model with experts: how unevenly its routers spread the rows, as the
// largest expert's rows over the mean (1: even; top_k of E experts all on the same k: E / top_k),
// of the worst MoE block, for each step and over the run; and, with a capacity factor, the share of
// the token copies the experts dropped.
class ExpertLoad {
 public:
  // One call's counts, the step's micro-batches summed; `copies`: its rows times top_k.
  void add(const MoEOutputs& moe, int64_t copies) {
    if (step_counts_.empty()) step_counts_.resize(moe.expert_counts.size());
    for (size_t b = 0; b < moe.expert_counts.size(); ++b) {
      const std::vector<int64_t>& counts = moe.expert_counts[b];
      step_counts_[b].resize(counts.size());
      for (size_t e = 0; e < counts.size(); ++e) step_counts_[b][e] += counts[e];
      copies_ += copies;
      dropped_ += copies - std::accumulate(counts.begin(), counts.end(), int64_t(0));
    }
  }
  void end_step() {
    last_ = 0;
    for (const std::vector<int64_t>& counts : step_counts_) {
      const int64_t most = *std::max_element(counts.begin(), counts.end());
      const int64_t rows = std::accumulate(counts.begin(), counts.end(), int64_t(0));
      if (rows > 0) last_ = std::max(last_, double(most) * double(counts.size()) / double(rows));
    }
    total_ += last_, ++steps_;
    step_counts_.clear();
  }
  double last() const { return last_; }
  double mean() const { return steps_ > 0 ? total_ / double(steps_) : 0; }
  double dropped() const { return copies_ > 0 ? double(dropped_) / double(copies_) : 0; }

 private:
  std::vector<std::vector<int64_t>> step_counts_;  // [MoE block][expert]
  double last_ = 0, total_ = 0;
  int64_t steps_ = 0, copies_ = 0, dropped_ = 0;
};

// One micro-batch's loss, what its backward starts from (the loss, and with experts the routers'
// auxiliary losses by their weights) and its experts' counts into `load`.
std::pair<Tensor, Tensor> loss_and_objective(Sequential& model, const Tensor& ids, const Tensor& next,
                                             const Config& c, ExpertLoad& load) {
  if (c.model.experts == 0) {
    const Tensor loss = next_token_loss(model, ids, next, c.model.vocab);
    return {loss, loss};
  }
  const SequentialOutput out = model(ids, {next.view(ids.shape())});
  const MoEOutputs moe = gpt_moe_outputs(out);
  load.add(moe, ids.numel() * c.model.top_k);
  // The routers' losses are in the model's dtype, the loss in its compute dtype (float32 for bfloat16).
  Tensor objective = out.output;
  const auto weighted = [&](const Tensor& loss, double weight) { return scale(cast(loss, objective.dtype()), weight); };
  for (const Tensor& balance : moe.balance_losses) objective = add(objective, weighted(balance, c.balance_loss));
  for (const Tensor& z : moe.z_losses) objective = add(objective, weighted(z, c.z_loss));
  return {out.output, objective};
}

// The validation loss (of the first --val-tokens), the unigram baseline over the same targets,
// both per token and per character, and the sampled text, printed and written to --json.
void report(TrainingRun& run, Sequential& model, const TokenizedCorpus& corpus, const Config& c, Device device,
            const ExpertLoad& load) {
  const int64_t n = corpus.validation.size(0), v = c.model.vocab, kept = c.val_tokens > 0 ? std::min(c.val_tokens, n) : n;
  const Tensor validation = corpus.validation.slice(0, kept);
  const double loss = validation_loss(model, validation, c.model.context, v, device);
  const double baseline = unigram_cross_entropy(corpus.train, validation.slice(1, kept), v);
  const double loss_per_char = nats_per_character(loss, validation, corpus.tokenizer);
  const double baseline_per_char = nats_per_character(baseline, validation, corpus.tokenizer);
  std::printf("validation loss %.4f nats/token, %.4f nats/character (unigram baseline %.4f, %.4f) after %lld steps, "
              "%.1f s of training, over %lld tokens\n",
              loss, loss_per_char, baseline, baseline_per_char, (long long)c.run.steps, run.seconds(),
              (long long)kept - 1);
  if (c.sample > 0) {
    Generator sampler(uint64_t(c.run.seed) + 2);
    std::printf("sampled text (temperature %g):\n%%\n%s\n", c.temperature,
                sample_text(model, corpus.tokenizer, "%\n", c.sample, c.model.context, c.model.width / c.model.heads,
                            c.temperature, sampler, device).c_str());
  }
  std::vector<std::pair<std::string, double>> fields{
      {"val_loss", loss}, {"unigram_loss", baseline}, {"val_nats_per_char", loss_per_char},
      {"unigram_nats_per_char", baseline_per_char}, {"val_bits_per_byte", loss_per_char / std::log(2.0)},
      {"train_loss", run.last_loss()}, {"peak_bytes", double(CachingAllocator::of(device).stats().peak_bytes_in_use)},
      {"parameters", double(parameter_count(model))}};
  if (c.model.experts > 0) {
    std::printf("experts' load (the busiest expert's rows over the mean, worst block): %.3f at the last step, %.3f "
                "over the run; %.2f%% of the token copies dropped\n", load.last(), load.mean(), 100 * load.dropped());
    fields.insert(fields.end(), {{"expert_load", load.last()}, {"expert_load_mean", load.mean()},
                                 {"dropped_fraction", load.dropped()}});
  }
  run.write_json(fields);
}

int train(Config c) {
  const Device device = run_device("gpt", c.run);
  const DType dtype = floating_dtype_flag("dtype", c.dtype);
  check(c.batch % c.accumulate == 0, "gpt: --batch=", c.batch, " does not split evenly into --accumulate=",
        c.accumulate, " micro-batches");
  const TokenizedCorpus corpus =
      tokenize_corpus(load_text_corpus(fortune_files(c.corpus)), c.tokenizer, c.vocab_size, c.token_cache);
  check(corpus.train.size(0) >= c.model.context + c.batch, "gpt: the training text of ", c.corpus, " has ",
        corpus.train.size(0), " tokens, too few for --batch=", c.batch, " windows of --context=", c.model.context);
  check(corpus.validation.size(0) >= 2, "gpt: the validation text of ", c.corpus, " has fewer than 2 tokens");
  c.model.vocab = corpus.tokenizer.size();

  Generator gen(uint64_t(c.run.seed));
  Sequential model = gpt_model(c.model, gen);
  apply_fusion_flags(model, c.run);
  model.to(device).to(dtype);  // before the optimizer, which keeps float32 masters of bfloat16 parameters
  const std::vector<ParamGroup> groups = gpt_decay_groups(model, c.weight_decay);
  AdamW optimizer(groups, {c.run.lr, 0.9, 0.95, 1e-8});
  WindowSampler batches(corpus.train, c.batch, c.model.context, uint64_t(c.run.seed) + 1);
  std::printf("gpt: tokens: %s\n", corpus.source.c_str());
  std::printf("gpt: %lld train / %lld validation tokens (%s), vocabulary %lld; %s, %lld layers of width %lld, %s, "
              "context %lld, %lld parameters in %s; batch %lld, fusion %s\n", (long long)corpus.train.size(0),
              (long long)corpus.validation.size(0), c.tokenizer.c_str(), (long long)c.model.vocab, c.model.arch.c_str(),
              (long long)c.model.layers, (long long)c.model.width, gpt_attention_heads(c.model).describe().c_str(),
              (long long)c.model.context,
              (long long)parameter_count(model), dtype_name(dtype), (long long)c.batch, c.run.no_fusion ? "off" : "on");
  std::printf("AdamW: weight decay %g on %zu of %zu parameter tensors (the weight matrices)\n", c.weight_decay,
              groups[0].params.size(), model.parameters().size());
  std::printf("%s\n", model.describe().c_str());

  const int64_t warmup = std::max<int64_t>(1, c.run.steps / 20);
  const std::string sized_by = "--batch=" + std::to_string(c.batch) + " --accumulate=" + std::to_string(c.accumulate);
  ExpertLoad load;
  // The utilization is against the float32 FMA peak: reported for float32 runs only.
  LoopSettings loop{c.batch * c.model.context, warmup, 0.1, 1.0, 10, sized_by,
                    dtype == DType::Float32 ? gpt_flops_per_token(model, c.model) : 0};
  if (c.model.experts > 0) {
    loop.progress_note = [&load, capacity = c.model.capacity_factor > 0] {
      char text[48];
      if (capacity) {
        std::snprintf(text, sizeof text, "load %.2f  dropped %.1f%%", load.last(), 100 * load.dropped());
      } else {
        std::snprintf(text, sizeof text, "load %.2f", load.last());
      }
      return std::string(text);
    };
  }
  TrainingRun run("gpt", c.run, model, optimizer, loop);
  for (const auto& [flag, value] : gpt_model_settings(c.model)) run.record(flag, value);
  run.record("--dtype", c.dtype);
  for (const auto& [name, value] : tokenizer_settings(corpus.tokenizer)) run.record(name, value);
  run.keep("data_order", batches);
  const int64_t rows = c.batch / c.accumulate;
  const bool finished = run.train([&](int64_t) {
    const Tensor window = batches.next();  // [batch, T + 1]
    double loss_sum = 0;
    for (int64_t micro = 0; micro < c.accumulate; ++micro) {  // the grads add up over the micro-batches
      const auto [ids, next] = inputs_and_targets(window.slice(micro * rows, (micro + 1) * rows));
      const auto [loss, objective] = loss_and_objective(model, ids.to(device), next.to(device), c, load);
      backward(scale(objective, 1.0 / double(c.accumulate)));
      loss_sum += loss.item() / double(c.accumulate);
    }
    if (c.model.experts > 0) load.end_step();
    return loss_sum;
  });
  // The BPE model beside the checkpoint too (generate reads it from the checkpoint).
  if (!c.run.checkpoint.empty()) save_tokenizer_model(corpus.tokenizer, c.run.checkpoint, "checkpoint");
  if (finished) report(run, model, corpus, c, device, load);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return main_reporting_errors(argc, argv, [&] {
    Flags flags("gpt", "Trains a GPT or a llama on Debian's fortunes, in characters or subword tokens.");
    Config c;
    c.run.steps = 1500, c.run.lr = 2e-3;
    add_run_flags(flags, c.run);
    add_gpt_model_flags(flags, c.model);
    flags.add("batch", c.batch, "windows per step", {1, 1 << 16});
    flags.add("weight-decay", c.weight_decay, "AdamW's decoupled weight decay of the Linear weight matrices (none "
              "on biases, LayerNorms and embeddings; with --resume the checkpoint's wins, and the run says so)",
              {0, 1});
    flags.add("accumulate", c.accumulate, "micro-batches per step, their grads summed (they split --batch)",
              {1, 1 << 16});
    flags.add("corpus", c.corpus, "folder of fortune files (Debian's fortunes package)");
    flags.add("tokenizer", c.tokenizer, "char (one token a byte) or bpe (subword pieces of a byte-level BPE model "
              "that SentencePiece trains on the training text)");
    flags.add("token-cache", c.token_cache, "--tokenizer=bpe: the folder that caches the tokens and BPE model of "
              "a text and --vocab-size, so that later runs map them (\"\": none)");
    flags.add("vocab-size", c.vocab_size, "--tokenizer=bpe: pieces of the BPE model (among them the 256 bytes, the "
              "unknown piece and each distinct character of the training text)", {257, 1 << 20});
    flags.add("val-tokens", c.val_tokens, "validation tokens to score, from the start (0: all)", {0, INT64_MAX});
    flags.add("balance-loss", c.balance_loss, "with --experts: the weight of the routers' load-balancing loss "
              "(Switch's, Mixtral's) in the objective", {0, 100});
    flags.add("z-loss", c.z_loss, "with --experts: the weight of the routers' z-loss (ST-MoE's)", {0, 100});
    flags.add("dtype", c.dtype, "float32, bfloat16 (parameters and activations; AdamW keeps float32 master "
              "weights, the losses are float32) or float64");
    flags.add("sample", c.sample, "tokens of text to sample at the end", {0, 1'000'000});
    flags.add("temperature", c.temperature, "sampling temperature (0: always the most likely token)", {0, 100});
    if (!flags.parse(argc, argv)) return 0;
    check_run_flags("gpt", flags, c.run);
    check_gpt_model_flags(flags, c.model);
    refuse_without_experts(flags, c.model, {"balance-loss", "z-loss"});
    check(c.val_tokens != 1, "--val-tokens: 1 token has nothing to predict; give 0 (all of them) or at least 2");
    return train(c);
  });
}
