#include "distributed/data_parallel.h"

#include <algorithm>
#include <chrono>

#include "autograd/tape.h"
#include "tensor/factories.h"
#include "tensor/tensor_math.h"

namespace fuselab {

DataParallel::DataParallel(std::vector<Tensor> params, Communicator& comm, int64_t bucket_bytes)
    : params_(std::move(params)), comm_(comm) {
  check(!params_.empty(), "DataParallel: no parameters");
  check(bucket_bytes > 0, "DataParallel: bucket_bytes must be positive, got ", bucket_bytes);
  const Tensor& first = params_.front();
  int64_t total = 0;
  for (const Tensor& p : params_) {
    check(p.dtype() == first.dtype() && p.device() == first.device(), "DataParallel: parameters of shape ",
          first.shape(), " ", first.dtype(), " on ", first.device(), " and of shape ", p.shape(), " ", p.dtype(),
          " on ", p.device(), " (all parameters must share dtype and device)");
    total += p.numel();
  }
  // Same models on every rank? Their sizes must agree before any buffer is exchanged.
  const double mean_total = comm_.mean(double(total));
  check(mean_total == double(total), "DataParallel: rank ", comm_.rank(), " has ", total,
        " parameter elements, but the ranks' mean is ", mean_total, " (the ranks built different models)");

  if (comm_.size() == 1) return;  // nothing to exchange

  // Buckets in reverse parameter order, each up to bucket_bytes (a larger parameter gets its own).
  const int64_t capacity = std::max<int64_t>(1, bucket_bytes / int64_t(dtype_size(first.dtype())));
  for (size_t k = params_.size(); k-- > 0;) {
    if (buckets_.empty() || buckets_.back().offsets.back() + params_[k].numel() > capacity) {
      buckets_.emplace_back();
      buckets_.back().offsets.push_back(0);
    }
    Bucket& bucket = buckets_.back();
    bucket.params.push_back(k);
    bucket.offsets.push_back(bucket.offsets.back() + params_[k].numel());
    bucket_of_[&params_[k].impl()] = buckets_.size() - 1;
  }
  for (Bucket& bucket : buckets_) bucket.buffer = zeros({bucket.offsets.back()}, first.dtype(), first.device());

  for (Tensor& p : params_) comm_.broadcast(p, 0);
}

void DataParallel::backward(const Tensor& loss) {
  if (comm_.size() == 1) return fuselab::backward(loss);
  fuselab::backward(loss, Tensor(), [this](const Tensor& leaf) { on_grad_ready(leaf); });
  const auto tape_done = std::chrono::steady_clock::now();
  for (Bucket& bucket : buckets_) bucket.ready = bucket.params.size();  // what backward did not reach
  start_ready_buckets();
  for (Bucket& bucket : buckets_) finish(bucket);
  next_to_start_ = 0;
  exposed_comm_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - tape_done).count();
}

void DataParallel::on_grad_ready(const Tensor& leaf) {
  const auto it = bucket_of_.find(&leaf.impl());
  if (it == bucket_of_.end()) return;  // a leaf that is not one of the parameters
  ++buckets_[it->second].ready;
  start_ready_buckets();
  for (size_t b = 0; b < next_to_start_; ++b) buckets_[b].pending->progress();  // let MPI move the data
}

// Collectives must be called in the same order on every rank, so bucket k starts only after
// buckets 0..k-1 have, even if its grads were ready first.
void DataParallel::start_ready_buckets() {
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].ready == buckets_[next_to_start_].params.size()) {
    start(buckets_[next_to_start_++]);
  }
}

// Packs each grad, already divided by the number of ranks, into the bucket: the sum the
// all-reduce leaves there is then the average, with no pass after it.
//   sum over ranks r of (grad_r / ranks) = (1 / ranks) * sum over ranks r of grad_r
void DataParallel::start(Bucket& bucket) {
  const double share = 1.0 / comm_.size();
  for (size_t i = 0; i < bucket.params.size(); ++i) {
    Tensor region = bucket.buffer.slice(bucket.offsets[i], bucket.offsets[i + 1]);
    const Tensor grad = params_[bucket.params[i]].grad();
    if (grad.defined()) math::scale_into(region, grad.view({-1}), share);
    else region.zero_();
  }
  bucket.pending = comm_.start_all_reduce_sum(bucket.buffer);
}

// Waits for the bucket's average and hands each parameter its slice as its grad (a view).
void DataParallel::finish(Bucket& bucket) {
  bucket.pending->wait();
  bucket.pending.reset();
  bucket.ready = 0;
  for (size_t i = 0; i < bucket.params.size(); ++i) {
    Tensor& param = params_[bucket.params[i]];
    param.set_grad(bucket.buffer.slice(bucket.offsets[i], bucket.offsets[i + 1]).view(param.shape()));
  }
}

}  // namespace fuselab
