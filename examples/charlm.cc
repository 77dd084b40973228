// A character-level language model in the style of Bengio et al. (2003): the embeddings of the
// previous k characters, concatenated, go through an MLP with residual blocks, and the model
// predicts the next character. Trained on a word list, one word per line, with '.' marking the
// start and the end of each word (examples/word_examples.h).
//
//   bazel run -c opt //examples:charlm -- [--data=FILE] [--batch=B] [--context=K] [--embed=E]
//       [--hidden=H] [--blocks=N] [--data-parallel] and the flags every training program has
//       (examples/training_run.h: --steps, --lr, --seed, --device, --checkpoint, --resume, --json, ...)
//
// --help lists every flag with its default and its range; docs/training_programs.md says more.
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
#include <cstdio>
#include <cstdlib>

#include "autograd/functional.h"
#include "data/batch_loader.h"
#include "distributed/data_parallel.h"
#include "distributed/mpi_communicator.h"
#include "examples/models.h"
#include "examples/training_run.h"
#include "examples/word_examples.h"
#include "optim/adamw.h"
#include "runtime/runtime.h"
#include "runtime/settings.h"

using namespace fuselab;
using namespace fuselab::examples;

namespace {

struct Config {
  CharLMConfig model;  // context, embed, hidden and blocks
  RunFlags run;
  int64_t batch = 256;
  bool data_parallel = false;
  std::string data = "/usr/share/dict/words";
};

void report(TrainingRun& run, Sequential& model, const Examples& train, const Examples& val, const Config& c,
            int ranks, Device device) {
  const double val_loss = evaluate(model, val, device), baseline = unigram_loss(train, val);
  std::printf("validation loss %.4f (unigram baseline %.4f) after %lld steps\nsampled words:", val_loss, baseline,
              (long long)c.run.steps);
  Generator sampler(uint64_t(c.run.seed) + 2);
  for (int i = 0; i < 10; ++i) std::printf(" %s", sample_word(model, c.model.context, sampler, device).c_str());
  std::printf("\n");
  run.write_json({{"val_loss", val_loss}, {"unigram_loss", baseline}, {"ranks", double(ranks)}});
}

int train(const Config& c, Communicator& comm) {
  const Device device = run_device("charlm", c.run);
  check(c.run.device == "cpu" || !c.data_parallel, "charlm: --data-parallel runs on CPU ranks (MPI); use --device cpu");
  check(c.batch % comm.size() == 0, "charlm: --batch=", c.batch, " does not split evenly over ", comm.size(), " ranks");
  const bool leader = comm.rank() == 0;  // prints, logs and writes checkpoints
  const std::vector<std::string> words = read_words(c.data, uint64_t(c.run.seed));
  const size_t val_words = std::max<size_t>(1, words.size() / 10);
  const Examples val = make_examples({words.begin(), words.begin() + val_words}, c.model.context);
  const Examples train = make_examples({words.begin() + val_words, words.end()}, c.model.context);

  Generator gen(uint64_t(c.run.seed));
  Sequential model = charlm_model(c.model, gen);
  apply_fusion_flags(model, c.run);
  model.to(device);
  AdamW optimizer(model.parameters(), {c.run.lr, 0.9, 0.99, 1e-8, 0.01});
  DataParallel parallel(model.parameters(), comm);  // one rank: plain backward
  BatchLoader loader(train.targets.size(0), c.batch, uint64_t(c.run.seed) + 1);  // the same batches on every rank
  if (leader) {
    std::printf("charlm: %zu words (%lld train / %lld val examples), context %lld, %lld blocks of width %lld, fusion %s\n",
                words.size(), (long long)train.targets.size(0), (long long)val.targets.size(0),
                (long long)c.model.context, (long long)c.model.blocks, (long long)c.model.hidden,
                c.run.no_fusion ? "off" : "on");
    if (c.data_parallel) {
      std::printf("data parallel: %d rank(s), %lld examples each per step\n", comm.size(),
                  (long long)(c.batch / comm.size()));
    }
    std::printf("%s\n", model.describe().c_str());
  }

  const LoopSettings loop{c.batch, c.run.steps / 20, 0.1, 1.0, 50, "--batch=" + std::to_string(c.batch),
                          matmul_flops_per_token(model)};
  TrainingRun run("charlm", c.run, model, optimizer, loop, leader);
  run.record("--context", c.model.context), run.record("--embed", c.model.embed);
  run.record("--hidden", c.model.hidden), run.record("--blocks", c.model.blocks);
  run.keep("data_order", loader);
  const bool finished = run.train([&](int64_t) {
    const std::vector<int64_t> rows = shard(loader.next(), comm.rank(), comm.size());
    const Tensor loss =
        cross_entropy(model(take_rows(train.contexts, rows).to(device)), take_rows(train.targets, rows).to(device));
    parallel.backward(loss);  // grads averaged over the ranks
    return comm.mean(loss.item());  // the whole batch's loss
  });
  if (!leader) return 0;
  if (c.data_parallel) {
    std::printf("data parallel: %.1f steps/s on %d rank(s); waiting for all-reduces after backward took %.1f%% of the time\n",
                run.steps_per_s(), comm.size(), 100 * parallel.exposed_comm_seconds() / run.seconds());
  }
  if (finished) report(run, model, train, val, c, comm.size(), device);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return main_reporting_errors(argc, argv, [&] {
    Flags flags("charlm", "Trains a character-level language model on a word list, one word a line.");
    Config c;
    c.run.steps = 10000, c.run.lr = 3e-3;
    add_run_flags(flags, c.run);
    // Ranges that keep every size meaningful and the data within memory (words are short, so a
    // context past 32 characters is padding).
    flags.add("batch", c.batch, "examples (a context and its next character) per step, over all ranks", {1, 1 << 16});
    flags.add("context", c.model.context, "characters the model sees before the one it predicts", {1, 32});
    flags.add("embed", c.model.embed, "embedding width of a character", {1, 1024});
    flags.add("hidden", c.model.hidden, "width of the MLP", {1, 8192});
    flags.add("blocks", c.model.blocks, "residual blocks", {0, 32});
    flags.add("data", c.data, "the word list");
    flags.add("data-parallel", c.data_parallel, "split each batch between the MPI ranks");
    if (!flags.parse(argc, argv)) return 0;
    check_run_flags("charlm", flags, c.run);
    if (!c.data_parallel) {
      SingleProcess single;
      return train(c, single);
    }
    MpiCommunicator world(&argc, &argv);
    if (runtime::settings().num_threads == 0) {  // share the machine's cores between its ranks
      set_num_threads(std::max(1, num_threads() / world.local_size()));
    }
    return run_or_abort(world, [&] { return train(c, world); });
  });
}
