// NCCL between GPUs, one GPU per MPI rank, bootstrapped through MPI as llm.c and flashlight do:
// rank 0 makes the NCCL unique id and MPI broadcasts it to the other ranks.
//
// CUDA tensors are reduced by NCCL on a stream of the communicator's own; CPU tensors (a rank's
// loss for mean(), say) go through the MPI bootstrap. A wait polls the stream with the
// bootstrap's timeout, so a stuck peer ends in an abort with a message instead of a hang.
//
//   mpirun -np 2 --allow-run-as-root <program>   (each rank takes GPU local_rank % GPU count)
#pragma once

#include <memory>
#include <string>

#include "distributed/mpi_communicator.h"

namespace fuselab {

class NcclCommunicator final : public Communicator {
 public:
  // `bootstrap` must outlive this communicator. Throws if this machine has no CUDA device.
  explicit NcclCommunicator(MpiCommunicator& bootstrap);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return bootstrap_.rank(); }
  int size() const override { return bootstrap_.size(); }
  Device device() const { return device_; }  // this rank's GPU
  std::unique_ptr<PendingCollective> start_all_reduce_sum(Tensor buffer) override;
  void broadcast(Tensor buffer, int root) override;
  [[noreturn]] void abort(const std::string& why) override;

  struct State;  // NCCL and CUDA handles, kept out of this header

 private:
  MpiCommunicator& bootstrap_;
  Device device_;
  std::unique_ptr<State> state_;
};

}  // namespace fuselab
