// Data-parallel training: every rank holds the same parameters (rank 0's, broadcast when the
// DataParallel is made), runs forward and backward on its own shard of each batch, and
// DataParallel::backward leaves every parameter's grad averaged over the ranks:
//
//   grad = (1 / ranks) * sum over ranks r of grad_r
//
// With equal shards and a loss that is a mean over the shard, that is the grad of the mean
// loss over the whole batch, so the optimizer step is the same on every rank and the
// parameters stay identical.
//
// With one rank there is nothing to average, and backward() is plain backward().
//
// Communication overlaps backward: the parameters are packed into buckets in reverse order
// (the order backward finishes their grads), and a bucket's all-reduce starts as soon as the
// tape reports the last of its grads final, while backward goes on with earlier layers.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "distributed/communicator.h"
#include "tensor/tensor.h"

namespace fuselab {

class DataParallel {
 public:
  DataParallel(std::vector<Tensor> params, Communicator& comm, int64_t bucket_bytes = int64_t(1) << 18);

  // backward(loss) on this rank's shard; returns when every grad is averaged over the ranks. With
  // several ranks, a parameter that no path from the loss reaches gets the average of the others'
  // grads (zero from this rank). The grads are then views of DataParallel's buckets: modify them in
  // place as you like (clipping does), but copy one you want to keep past the next backward().
  void backward(const Tensor& loss);

  size_t num_buckets() const { return buckets_.size(); }  // 0 with one rank

  // Seconds the backward() calls so far spent waiting for all-reduces after the tape was done:
  // the communication that did not overlap compute.
  double exposed_comm_seconds() const { return exposed_comm_seconds_; }

 private:
  struct Bucket {
    std::vector<size_t> params;  // indices into params_, in the order backward finishes them
    std::vector<int64_t> offsets;
    Tensor buffer;  // the bucket's grads, flat, reduced in place
    size_t ready = 0;
    std::unique_ptr<PendingCollective> pending;
  };
  void on_grad_ready(const Tensor& leaf);
  void start_ready_buckets();
  void start(Bucket& bucket);
  void finish(Bucket& bucket);

  std::vector<Tensor> params_;
  Communicator& comm_;
  std::vector<Bucket> buckets_;
  std::unordered_map<const TensorImpl*, size_t> bucket_of_;  // each parameter's bucket
  size_t next_to_start_ = 0;  // buckets start in index order, the same on every rank
  double exposed_comm_seconds_ = 0;
};

}  // namespace fuselab
