// Mini-batches of example indices: a seeded shuffle per epoch and a policy for the last,
// smaller batch. Data-parallel ranks build the same loader (same seed) and each takes its
// shard of every batch.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace fuselab {

enum class LastBatch { Keep, Drop };

class BatchLoader {
 public:
  BatchLoader(int64_t num_examples, int64_t batch_size, uint64_t seed, bool shuffle = true,
              LastBatch last = LastBatch::Keep);

  // The next batch of indices; a new epoch (reshuffled) starts after the last batch.
  std::vector<int64_t> next();
  int64_t epoch() const { return epoch_; }
  int64_t batches_per_epoch() const;

  // Where the loader is, for checkpoints: an int64 [10] CPU tensor of the example count and batch
  // size it was made with, the epoch, the position in it, and the generator's state as the epoch
  // began (the epoch's order is shuffled again from it, not saved: it can be millions of entries).
  // load_state continues exactly where state() was taken; it throws, naming both values, when the
  // example count or the batch size differ from this loader's, and changes nothing then.
  Tensor state() const;
  void load_state(const Tensor& state);

 private:
  void start_epoch();

  int64_t num_examples_, batch_size_;
  bool shuffle_;
  LastBatch last_;
  Generator gen_;
  Generator::State epoch_start_;  // gen_ before this epoch's shuffle
  std::vector<int64_t> order_;
  int64_t position_ = 0, epoch_ = -1;
};

// Rank `rank`'s part of `batch` among `ranks`: a contiguous block, the blocks' sizes differing by
// at most one (equal when ranks divides the batch size).
std::vector<int64_t> shard(const std::vector<int64_t>& batch, int rank, int ranks);

// Rows `rows` of t (along dim 0), in that order, as a new tensor.
Tensor take_rows(const Tensor& t, const std::vector<int64_t>& rows);

}  // namespace fuselab
