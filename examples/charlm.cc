// A character-level language model in the style of Bengio et al. (2003): the embeddings of the
// previous k characters, concatenated, go through an MLP with residual blocks, and the model
// predicts the next character. Trained on a word list, one word per line, with '.' marking the
// start and the end of each word.
//
//   bazel run -c opt //examples:charlm -- [--steps=N] [--seed=S] [--data=FILE] [--no-fusion]
//       [--checkpoint=DIR [--resume] [--checkpoint-every=N]] [--json=FILE] [--loss-log=FILE]
//       [--stop-after=N] (stop early, as if interrupted; --resume continues) [--detect-anomaly]
//
// --help lists every flag with its default and its range.
//
// With --checkpoint the state is saved every --checkpoint-every steps and at the end of the run;
// --resume continues from that checkpoint, which must exist. A non-finite loss or grad norm stops
// the run naming the step; --detect-anomaly also checks every grad, naming the parameter.
//
// Data-parallel over MPI ranks, the global batch split between them (rank 0 alone prints,
// logs and writes checkpoints, which load into a run with any number of ranks):
//
//   mpirun -np 2 --oversubscribe --allow-run-as-root bazel-bin/examples/charlm --data-parallel
//
// The whole model is one Sequential of fusible ops (built by examples/models.h, which //tools:bench
// times too):
//   Embedding, Reshape, Linear, Bias, GELU,
//   blocks x [MakeExtraOutput, RMSNorm, Linear, Bias, GELU, Linear, Bias, AddExtraInput],
//   RMSNorm, Linear, Bias  ->  logits, then cross_entropy.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "autograd/functional.h"
#include "data/batch_loader.h"
#include "distributed/data_parallel.h"
#include "distributed/mpi_communicator.h"
#include "examples/flags.h"
#include "examples/models.h"
#include "examples/output_file.h"
#include "fuser/sequential.h"
#include "kernels/cpu/threading.h"
#include "kernels/cuda/device_api.h"
#include "optim/adamw.h"
#include "optim/anomaly.h"
#include "optim/checkpoint.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "tensor/factories.h"

using namespace fuselab;

namespace {

constexpr int64_t kVocab = examples::CharLMConfig{}.vocab;  // '.' then a-z
char to_char(int64_t id) { return id == 0 ? '.' : char('a' + id - 1); }

struct Config {
  examples::CharLMConfig model;  // context, embed, hidden and blocks
  int64_t steps, stop_after, batch, checkpoint_every;
  double lr;
  uint64_t seed;
  bool fusion, resume, data_parallel, detect_anomaly;
  std::string data, checkpoint, json, loss_log, device;
};

// Lowercased words of letters a-z only, deduplicated, in a seeded random order.
std::vector<std::string> read_words(const std::string& path, uint64_t seed) {
  std::ifstream file(path);
  check(file.good(), "charlm: cannot open the word list ", path,
        (path == "/usr/share/dict/words" ? " (apt-get install wamerican)" : ""));
  std::set<std::string> unique;
  std::string line;
  while (std::getline(file, line)) {
    std::string word;
    bool ok = !line.empty();
    for (char c : line) {
      if (c == '\r') continue;
      const char lower = char(std::tolower(static_cast<unsigned char>(c)));
      ok &= lower >= 'a' && lower <= 'z';
      word += lower;
    }
    if (ok) unique.insert(word);
  }
  check(unique.size() >= 10, "charlm: ", path, " has only ", unique.size(), " usable words (a-z, one per line)");
  std::vector<std::string> words(unique.begin(), unique.end());
  Generator gen(seed);
  for (size_t i = words.size() - 1; i > 0; --i) std::swap(words[i], words[gen.next_u64() % (i + 1)]);
  return words;
}

// One example per character and per word end: the previous `context` ids and the next id.
struct Examples {
  Tensor contexts;  // int64 [N, context]
  Tensor targets;   // int64 [N]
};

Examples make_examples(const std::vector<std::string>& words, int64_t context) {
  std::vector<int64_t> contexts, targets;
  for (const std::string& word : words) {
    std::vector<int64_t> window(size_t(context), 0);
    for (size_t i = 0; i <= word.size(); ++i) {
      const int64_t next = i < word.size() ? word[i] - 'a' + 1 : 0;
      contexts.insert(contexts.end(), window.begin(), window.end());
      targets.push_back(next);
      window.erase(window.begin());
      window.push_back(next);
    }
  }
  const int64_t n = int64_t(targets.size());
  return {from_vector<int64_t>(contexts, {n, context}), from_vector<int64_t>(targets, {n})};
}

double evaluate(Sequential& model, const Examples& data, Device device) {
  NoGradGuard no_grad;
  model.eval();
  const int64_t n = data.targets.size(0), chunk = 4096;
  double total = 0;
  for (int64_t start = 0; start < n; start += chunk) {
    const int64_t end = std::min(n, start + chunk);
    const Tensor loss = cross_entropy(model(data.contexts.slice(start, end).to(device)),
                                      data.targets.slice(start, end).to(device));
    total += loss.item() * double(end - start);
  }
  model.train();
  return total / double(n);
}

// Cross-entropy of predicting every validation target from the training targets' frequencies.
double unigram_loss(const Examples& train, const Examples& val) {
  std::vector<double> counts(kVocab, 1.0);  // add-one smoothing
  for (int64_t t : train.targets.to_vector<int64_t>()) counts[size_t(t)] += 1;
  double total = 0;
  for (double c : counts) total += c;
  double loss = 0;
  const auto targets = val.targets.to_vector<int64_t>();
  for (int64_t t : targets) loss -= std::log(counts[size_t(t)] / total);
  return loss / double(targets.size());
}

std::string sample_word(Sequential& model, int64_t context, Generator& gen, Device device) {
  NoGradGuard no_grad;
  std::vector<int64_t> window(size_t(context), 0);
  std::string word;
  while (word.size() < 30) {
    const Tensor logits = model(from_vector<int64_t>(window, {1, context}).to(device)).to(Device::cpu());
    const auto probs = softmax(logits).to_vector<float>();
    double u = gen.uniform(), acc = 0;
    int64_t next = kVocab - 1;
    for (int64_t i = 0; i < kVocab; ++i) {
      acc += probs[size_t(i)];
      if (u < acc) {
        next = i;
        break;
      }
    }
    if (next == 0) break;
    word += to_char(next);
    window.erase(window.begin());
    window.push_back(next);
  }
  return word;
}

void print_progress(int64_t step, int64_t total, double loss, double tokens_per_s, double seconds_left) {
  const int width = 30, filled = int(width * step / total);
  std::printf("\r[%s%s] step %lld/%lld  loss %.4f  %.1fk tok/s  %3.0fs left ", std::string(filled, '#').c_str(),
              std::string(width - filled, '.').c_str(), (long long)step, (long long)total, loss, tokens_per_s / 1000,
              seconds_left);
  std::fflush(stdout);
}

int run(const Config& c, Communicator& comm) {
  check(c.device == "cpu" || c.device == "cuda", "charlm: --device must be cpu or cuda, got ", c.device);
  check(c.device == "cpu" || kernels::cuda::device_count() > 0,
        "charlm: --device cuda, but this machine has no CUDA device");
  check(c.device == "cpu" || !c.data_parallel, "charlm: --data-parallel runs on CPU ranks (MPI); use --device cpu");
  const Device device = c.device == "cpu" ? Device::cpu() : Device::cuda(0);
  check(c.batch % comm.size() == 0, "charlm: --batch=", c.batch, " does not split evenly over ", comm.size(), " ranks");
  const bool leader = comm.rank() == 0;  // prints, logs and writes checkpoints
  const std::vector<std::string> words = read_words(c.data, c.seed);
  const size_t val_words = std::max<size_t>(1, words.size() / 10);
  const Examples val = make_examples({words.begin(), words.begin() + val_words}, c.model.context);
  const Examples train = make_examples({words.begin() + val_words, words.end()}, c.model.context);

  Generator gen(c.seed);
  Sequential model = examples::charlm_model(c.model, gen);
  model.set_fusion_switches(c.fusion);
  model.to(device);
  AdamW optimizer(model.parameters(), {c.lr, 0.9, 0.99, 1e-8, 0.01});
  DataParallel parallel(model.parameters(), comm);  // one rank: plain backward
  BatchLoader loader(train.targets.size(0), c.batch, c.seed + 1);  // the same batches on every rank
  if (leader) {
    std::printf("charlm: %zu words (%lld train / %lld val examples), context %lld, %lld blocks of width %lld, fusion %s\n",
              words.size(), (long long)train.targets.size(0), (long long)val.targets.size(0), (long long)c.model.context,
              (long long)c.model.blocks, (long long)c.model.hidden, c.fusion ? "on" : "off");
    if (c.data_parallel) {
      std::printf("data parallel: %d rank(s), %lld examples each per step\n", comm.size(),
                  (long long)(c.batch / comm.size()));
    }
    std::printf("%s\n", model.describe().c_str());
  }

  const std::string checkpoint_file = c.checkpoint.empty() ? "" : c.checkpoint + "/charlm.safetensors";
  int64_t start = 0;
  if (c.resume) {
    check(std::filesystem::exists(checkpoint_file), "charlm: --resume, but there is no checkpoint ", checkpoint_file);
    start = load_checkpoint(checkpoint_file, model.named_parameters(), optimizer);
    check(start <= c.steps, "charlm: checkpoint ", checkpoint_file, " is at step ", start, ", past --steps=", c.steps);
    for (int64_t s = 0; s < start; ++s) loader.next();  // the loader is deterministic: replay its batches
    if (leader) std::printf("resumed from %s at step %lld\n", checkpoint_file.c_str(), (long long)start);
  }
  auto save = [&](int64_t step) {
    if (leader && !checkpoint_file.empty()) save_checkpoint(checkpoint_file, model.named_parameters(), optimizer, step);
  };
  // Opened before training, so an unwritable path fails now rather than after the run.
  examples::OutputFile loss_log("loss-log", leader ? c.loss_log : "", std::ios::app);
  examples::OutputFile json("json", leader ? c.json : "");
  if (leader && !c.checkpoint.empty()) std::filesystem::create_directories(c.checkpoint);

  const auto begin = std::chrono::steady_clock::now();
  double tokens_per_s = 0, last_loss = 0;
  const int64_t stop = std::min(c.steps, c.stop_after);
  for (int64_t step = start; step < stop; ++step) {
    const std::vector<int64_t> rows = shard(loader.next(), comm.rank(), comm.size());
    optimizer.set_lr_scale(cosine_with_warmup(step, c.steps / 20, c.steps, 1.0, 0.1));  // times c.lr
    optimizer.zero_grad();
    const Tensor loss =
        cross_entropy(model(take_rows(train.contexts, rows).to(device)), take_rows(train.targets, rows).to(device));
    parallel.backward(loss);  // grads averaged over the ranks
    if (c.detect_anomaly) check_finite_grads("charlm", model.named_parameters(), step + 1);
    const double grad_norm = clip_grad_norm(model.parameters(), 1.0);
    check(std::isfinite(grad_norm), "charlm: the grad norm is ", grad_norm, " at step ", step + 1,
          "; stopping (--detect-anomaly names the parameter)");
    optimizer.step();
    last_loss = comm.mean(loss.item());  // the whole batch's loss
    check_finite_loss("charlm", last_loss, step + 1);
    loss_log.write(step + 1, ' ', last_loss, '\n');
    if ((step + 1) % c.checkpoint_every == 0 || step + 1 == stop) save(step + 1);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    tokens_per_s = double((step + 1 - start) * c.batch) / seconds;
    if (leader && ((step + 1) % 50 == 0 || step + 1 == c.steps)) {
      print_progress(step + 1, c.steps, last_loss, tokens_per_s, seconds / double(step + 1 - start) * double(c.steps - step - 1));
    }
  }
  if (!leader) return 0;
  std::printf("\n");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  if (c.data_parallel) {
    std::printf("data parallel: %.1f steps/s on %d rank(s); waiting for all-reduces after backward took %.1f%% of the time\n",
                double(stop - start) / seconds, comm.size(), 100 * parallel.exposed_comm_seconds() / seconds);
  }
  if (stop < c.steps) {
    std::printf("stopped after step %lld of %lld (--stop-after)\n", (long long)stop, (long long)c.steps);
    return 0;
  }

  const double val_loss = evaluate(model, val, device), baseline = unigram_loss(train, val);
  std::printf("validation loss %.4f (unigram baseline %.4f) after %lld steps\nsampled words:", val_loss, baseline,
              (long long)c.steps);
  Generator sampler(c.seed + 2);
  for (int i = 0; i < 10; ++i) std::printf(" %s", sample_word(model, c.model.context, sampler, device).c_str());
  std::printf("\n");
  json.write("{\"val_loss\": ", val_loss, ", \"unigram_loss\": ", baseline, ", \"steps\": ", c.steps,
             ", \"tokens_per_s\": ", tokens_per_s, ", \"steps_per_s\": ", double(c.steps - start) / seconds,
             ", \"ranks\": ", comm.size(), ", \"fused\": ", c.fusion ? "true" : "false", "}\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    examples::Flags flags("charlm", "Trains a character-level language model on a word list, one word a line.");
    Config c{};
    c.steps = 10000, c.batch = 256;
    c.checkpoint_every = 500, c.lr = 3e-3, c.data = "/usr/share/dict/words", c.device = "cpu";
    int64_t seed = 0;
    bool no_fusion = false;
    // Ranges that keep every size meaningful and the data within memory (words are short, so a
    // context past 32 characters is padding).
    flags.add("steps", c.steps, "training steps", {1, 1'000'000'000});
    flags.add("stop-after", c.stop_after, "stop after this many steps, as an interrupted run would", {1, 1'000'000'000});
    flags.show("stop-after", "= --steps", "[1, --steps]");  // checked once --steps is known
    flags.add("batch", c.batch, "examples (a context and its next character) per step, over all ranks", {1, 1 << 16});
    flags.add("context", c.model.context, "characters the model sees before the one it predicts", {1, 32});
    flags.add("embed", c.model.embed, "embedding width of a character", {1, 1024});
    flags.add("hidden", c.model.hidden, "width of the MLP", {1, 8192});
    flags.add("blocks", c.model.blocks, "residual blocks", {0, 32});
    flags.add("lr", c.lr, "peak AdamW learning rate (cosine schedule with warm-up)", {1e-9, 10});
    flags.add("seed", seed, "seed of the data order, the initialization and the sampling", {0, INT64_MAX});
    flags.add("no-fusion", no_fusion, "run the model unfused");
    flags.add("data", c.data, "the word list");
    flags.add("checkpoint", c.checkpoint, "folder to save the training state in (none: no checkpoints)");
    flags.add("checkpoint-every", c.checkpoint_every, "steps between checkpoints", {1, 1'000'000'000});
    flags.add("resume", c.resume, "continue from the state in --checkpoint");
    flags.add("json", c.json, "file for the final report, as JSON");
    flags.add("loss-log", c.loss_log, "file for the loss of every step");
    flags.add("device", c.device, "cpu or cuda");
    flags.add("data-parallel", c.data_parallel, "split each batch between the MPI ranks");
    flags.add("detect-anomaly", c.detect_anomaly, "check every grad for non-finite values, naming the parameter");
    if (!flags.parse(argc, argv)) return 0;
    if (!flags.given("stop-after")) c.stop_after = c.steps;
    examples::check_in_range("stop-after", c.stop_after, {1, c.steps});
    c.seed = uint64_t(seed);
    c.fusion = !no_fusion;
    check(!c.resume || !c.checkpoint.empty(), "charlm: --resume needs --checkpoint=DIR to resume from");
    if (!c.data_parallel) {
      SingleProcess single;
      return run(c, single);
    }
    MpiCommunicator world(&argc, &argv);
    if (!std::getenv("FUSELAB_NUM_THREADS")) {  // share the machine's cores between its ranks
      kernels::cpu::set_num_threads(std::max(1, kernels::cpu::num_threads() / world.local_size()));
    }
    return run_or_abort(world, [&] { return run(c, world); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nerror: %s\n", e.what());
    return 1;
  }
}
