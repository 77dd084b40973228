// Training batches for a language model over one token stream: [batch, context + 1] windows of
// consecutive tokens, the first `context` of each row the model's input and the last `context`
// its targets. The windows' start positions come from a BatchLoader (data/batch_loader.h): each
// epoch visits every start once, in a seeded random order, so a run is the same on every machine.
#pragma once

#include <cstdint>

#include "data/batch_loader.h"
#include "tensor/tensor.h"

namespace fuselab {

class WindowSampler {
 public:
  // `tokens`: an int64 CPU tensor [N], N >= context + batch, so an epoch holds a whole batch.
  WindowSampler(const Tensor& tokens, int64_t batch, int64_t context, uint64_t seed);

  Tensor next();  // int64 [batch, context + 1]
  int64_t epoch() const { return starts_.epoch(); }
  int64_t batches_per_epoch() const { return starts_.batches_per_epoch(); }
  // Where the sampler is, for checkpoints (BatchLoader::state).
  Tensor state() const { return starts_.state(); }
  void load_state(const Tensor& state) { starts_.load_state(state); }

 private:
  Tensor tokens_;
  int64_t batch_, context_;
  BatchLoader starts_;
};

}  // namespace fuselab
