// The collectives data-parallel training needs, behind one interface: MPI between processes on
// CPU (mpi_communicator.h), NCCL between GPUs (nccl_communicator.h), or a single rank.
//
// Every rank must call the same collectives in the same order. A collective that waits longer
// than the communicator's timeout aborts every rank with a message instead of hanging.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "tensor/tensor.h"

namespace fuselab {

// A collective in flight; wait() returns when its result is in the buffer. MPI moves data only
// inside MPI calls, so whoever waits on one calls progress() now and then to let it advance.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual void wait() = 0;
  virtual void progress() {}
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Starts summing `buffer` (float32 or float64) over all ranks, in place; every rank gets the
  // same result. The buffer must stay alive and untouched until wait() returns.
  virtual std::unique_ptr<PendingCollective> start_all_reduce_sum(Tensor buffer) = 0;
  // Copies rank `root`'s `buffer` into every other rank's.
  virtual void broadcast(Tensor buffer, int root) = 0;
  // Stops every rank's process with `why` on stderr (an error on one rank must not leave the
  // others waiting in a collective).
  [[noreturn]] virtual void abort(const std::string& why) = 0;

  void all_reduce_sum(Tensor buffer) { start_all_reduce_sum(std::move(buffer))->wait(); }
  // The mean of `value` over all ranks, e.g. of each rank's loss.
  double mean(double value);
};

// One process: collectives are no-ops. Lets the same training loop run with or without MPI.
class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::unique_ptr<PendingCollective> start_all_reduce_sum(Tensor buffer) override;
  void broadcast(Tensor, int) override {}
  [[noreturn]] void abort(const std::string& why) override;
};

// Runs one rank's `body` and returns its exit code. An exception on this rank aborts every rank
// with its message, instead of leaving the others waiting in a collective for ever.
int run_or_abort(Communicator& comm, const std::function<int()>& body);

}  // namespace fuselab
