// The models //tools:bench times, by name: its own blocks (mlp_block, norm_block), the MNIST-sized
// classifier (mnist_mlp) and the model of every example (examples/models.h). Each entry says which size flags it reads,
// builds its Sequential, and makes a random batch of its inputs with the loss that drives its backward.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "examples/flags.h"
#include "examples/models.h"
#include "fuser/sequential.h"

namespace fuselab::bench {

// A size a model reads beyond --tokens and --hidden, as a flag: e.g. charlm's --blocks.
struct SizeFlag {
  std::string name, help;
  int64_t default_value;
  examples::Range<int64_t> range;
};

// The sizes of one run: the batch's rows, the model's width, and its own size flags by name.
struct ModelSizes {
  int64_t tokens, hidden;
  std::map<std::string, int64_t> extra;
};

struct BenchModel {
  std::string name;
  int64_t default_hidden;            // --hidden when it is not given: the example's width
  std::vector<SizeFlag> size_flags;  // beyond --tokens and --hidden
  std::function<Sequential(const ModelSizes&, Generator&)> build;  // weights drawn from the generator
  // Inputs of the model's dtype on the device (integer ids stay int64) and the loss to time.
  std::function<examples::Batch(const ModelSizes&, DType, Device, Generator&)> batch;
  std::function<void()> register_fusions;  // the user fusions the model is for, or empty
  int64_t default_tokens = 4096;           // --tokens when it is not given
};

// Every model, in the order --help lists them.
const std::vector<BenchModel>& bench_models();
// The model called `name`, or null.
const BenchModel* find_bench_model(const std::string& name);

}  // namespace fuselab::bench
