// MPI_COMM_WORLD as a Communicator: one process per rank, started by mpirun, reducing CPU
// tensors with MPI_Iallreduce.
//
//   mpirun -np 2 --oversubscribe --allow-run-as-root bazel-bin/examples/charlm --data-parallel
#pragma once

#include <string>

#include "distributed/communicator.h"

namespace fuselab {

class MpiCommunicator final : public Communicator {
 public:
  // Initialises MPI (once per process) and finalises it when destroyed. A
  // collective that waits longer than `timeout_s` aborts every rank; the default is
  // FUSELAB_DIST_TIMEOUT_S, or 300 seconds.
  MpiCommunicator(int* argc, char*** argv, double timeout_s = default_timeout_s());
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const { return local_rank_; }  // this rank's index among those on this machine
  int local_size() const { return local_size_; }  // ranks on this machine
  double timeout_s() const { return timeout_s_; }
  std::unique_ptr<PendingCollective> start_all_reduce_sum(Tensor buffer) override;
  void broadcast(Tensor buffer, int root) override;
  // Copies `bytes` at rank `root`'s `data` into every other rank's (e.g. NCCL's unique id).
  void broadcast_bytes(void* data, size_t bytes, int root);
  [[noreturn]] void abort(const std::string& why) override;

  static double default_timeout_s();

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  double timeout_s_;
};

}  // namespace fuselab
