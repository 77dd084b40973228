#include "data/batch_loader.h"

#include <cstring>
#include <numeric>

#include "tensor/factories.h"

namespace fuselab {

BatchLoader::BatchLoader(int64_t num_examples, int64_t batch_size, uint64_t seed, bool shuffle, LastBatch last)
    : num_examples_(num_examples), batch_size_(batch_size), shuffle_(shuffle), last_(last), gen_(seed) {
  check(num_examples > 0 && batch_size > 0, "BatchLoader: needs examples and a batch size > 0, got ", num_examples,
        " and ", batch_size);
  check(last != LastBatch::Drop || batch_size <= num_examples, "BatchLoader: batch size ", batch_size,
        " with LastBatch::Drop leaves no batch of ", num_examples, " examples");
  start_epoch();
}

int64_t BatchLoader::batches_per_epoch() const {
  return last_ == LastBatch::Drop ? num_examples_ / batch_size_ : (num_examples_ + batch_size_ - 1) / batch_size_;
}

void BatchLoader::start_epoch() {
  epoch_start_ = gen_.state();
  order_.resize(size_t(num_examples_));
  std::iota(order_.begin(), order_.end(), 0);
  if (shuffle_) {  // Fisher-Yates from the seeded generator: the same order on every machine
    for (int64_t i = num_examples_ - 1; i > 0; --i) std::swap(order_[i], order_[gen_.next_u64() % uint64_t(i + 1)]);
  }
  position_ = 0;
  ++epoch_;
}

Tensor BatchLoader::state() const {
  std::vector<int64_t> words = {num_examples_, batch_size_, epoch_, position_};
  for (uint64_t word : epoch_start_) words.push_back(int64_t(word));
  return from_vector<int64_t>(words, {int64_t(words.size())});
}

void BatchLoader::load_state(const Tensor& state) {
  check(state.dtype() == DType::Int64 && state.shape() == Shape{10}, "BatchLoader: a saved state is int64 [10], got ",
        state.dtype(), " ", state.shape());
  const std::vector<int64_t> words = state.to(Device::cpu()).to_vector<int64_t>();
  check(words[0] == num_examples_ && words[1] == batch_size_, "BatchLoader: the saved data order is of ", words[0],
        " examples in batches of ", words[1], "; this loader's is of ", num_examples_, " in batches of ", batch_size_);
  check(words[2] >= 0 && words[3] >= 0 && words[3] <= num_examples_, "BatchLoader: the saved epoch ", words[2],
        " and position ", words[3], " are not a place in ", num_examples_, " examples");
  Generator::State start;
  for (size_t i = 0; i < start.size(); ++i) start[i] = uint64_t(words[4 + i]);
  gen_.set_state(start);
  start_epoch();  // the same shuffle as when the epoch began
  epoch_ = words[2];
  position_ = words[3];
}

std::vector<int64_t> BatchLoader::next() {
  const int64_t remaining = num_examples_ - position_;
  if (remaining == 0 || (last_ == LastBatch::Drop && remaining < batch_size_)) start_epoch();
  const int64_t count = std::min(batch_size_, num_examples_ - position_);
  std::vector<int64_t> batch(order_.begin() + position_, order_.begin() + position_ + count);
  position_ += count;
  return batch;
}

Tensor take_rows(const Tensor& t, const std::vector<int64_t>& rows) {
  check(t.dim() >= 1 && t.device().is_cpu(), "take_rows: needs a CPU tensor with a row dim, got ", t.shape());
  Shape shape = t.shape();
  shape[0] = int64_t(rows.size());
  Tensor out = empty(shape, t.dtype());
  const size_t row_bytes = t.size(0) ? t.nbytes() / size_t(t.size(0)) : 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    check(0 <= rows[i] && rows[i] < t.size(0), "take_rows: row ", rows[i], " out of range for shape ", t.shape());
    std::memcpy(static_cast<char*>(out.raw_data()) + i * row_bytes,
                static_cast<const char*>(t.raw_data()) + rows[i] * row_bytes, row_bytes);
  }
  return out;
}

std::vector<int64_t> shard(const std::vector<int64_t>& batch, int rank, int ranks) {
  check(ranks > 0 && rank >= 0 && rank < ranks, "shard: rank ", rank, " of ", ranks);
  const size_t n = batch.size(), begin = n * size_t(rank) / size_t(ranks), end = n * size_t(rank + 1) / size_t(ranks);
  return {batch.begin() + std::ptrdiff_t(begin), batch.begin() + std::ptrdiff_t(end)};
}

}  // namespace fuselab
