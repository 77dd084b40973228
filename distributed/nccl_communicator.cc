#include "distributed/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <thread>

#include "kernels/cuda/device_api.h"

namespace fuselab {
namespace {

void check_cuda(cudaError_t status, const char* call) {
  check(status == cudaSuccess, "NcclCommunicator: ", call, " failed: ", cudaGetErrorString(status));
}

void check_nccl(ncclResult_t status, const char* call) {
  check(status == ncclSuccess, "NcclCommunicator: ", call, " failed: ", ncclGetErrorString(status));
}

ncclDataType_t nccl_type(const Tensor& buffer, Device device, const char* what) {
  check(buffer.device() == device, "NcclCommunicator: ", what, " of a tensor of shape ", buffer.shape(), " on ",
        buffer.device(), ", but this rank's GPU is ", device);
  if (buffer.dtype() == DType::Float32) return ncclFloat32;
  if (buffer.dtype() == DType::Float64) return ncclFloat64;
  fail("NcclCommunicator: ", what, " needs float32 or float64, got ", buffer.dtype(), " of shape ", buffer.shape());
}

}  // namespace

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;  // blocking: ordered after work on the legacy default stream
};

namespace {

// A collective queued on the communicator's stream; wait() polls an event recorded after it.
class NcclPending final : public PendingCollective {
 public:
  NcclPending(Tensor buffer, NcclCommunicator& comm, NcclCommunicator::State& state, double timeout_s)
      : buffer_(std::move(buffer)), comm_(comm), state_(state), timeout_s_(timeout_s) {
    check_cuda(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreate");
    check_cuda(cudaEventRecord(done_, state_.stream), "cudaEventRecord");
  }
  ~NcclPending() override {
    if (done_ == nullptr) return;
    wait();
    cudaEventDestroy(done_);
  }
  void wait() override {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s_);
    for (;;) {
      const cudaError_t status = cudaEventQuery(done_);
      if (status == cudaSuccess) return;
      if (status != cudaErrorNotReady) check_cuda(status, "cudaEventQuery");
      ncclResult_t async = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(state_.comm, &async), "ncclCommGetAsyncError");
      if (async != ncclSuccess) comm_.abort(std::string("NCCL collective failed: ") + ncclGetErrorString(async));
      if (Clock::now() > deadline) {
        comm_.abort("NCCL collective did not complete within " + std::to_string(int(timeout_s_)) +
                    " s (another rank failed or is stuck)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

 private:
  Tensor buffer_;  // kept alive while NCCL writes into it
  NcclCommunicator& comm_;
  NcclCommunicator::State& state_;
  double timeout_s_;
  cudaEvent_t done_ = nullptr;
};

}  // namespace

NcclCommunicator::NcclCommunicator(MpiCommunicator& bootstrap)
    : bootstrap_(bootstrap), state_(std::make_unique<State>()) {
  const int gpus = kernels::cuda::device_count();
  check(gpus > 0, "NcclCommunicator: rank ", rank(), " of ", size(), " found no CUDA device");
  device_ = Device::cuda(bootstrap_.local_rank() % gpus);
  check_cuda(cudaSetDevice(device_.index), "cudaSetDevice");
  check_cuda(cudaStreamCreate(&state_->stream), "cudaStreamCreate");

  ncclUniqueId id;
  if (rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  bootstrap_.broadcast_bytes(&id, sizeof(id), 0);
  check_nccl(ncclCommInitRank(&state_->comm, size(), id, rank()), "ncclCommInitRank");
}

NcclCommunicator::~NcclCommunicator() {
  if (state_->comm != nullptr) ncclCommDestroy(state_->comm);
  if (state_->stream != nullptr) cudaStreamDestroy(state_->stream);
}

std::unique_ptr<PendingCollective> NcclCommunicator::start_all_reduce_sum(Tensor buffer) {
  if (buffer.device().is_cpu()) return bootstrap_.start_all_reduce_sum(std::move(buffer));
  const ncclDataType_t type = nccl_type(buffer, device_, "all_reduce_sum");
  check_cuda(cudaSetDevice(device_.index), "cudaSetDevice");
  check_nccl(ncclAllReduce(buffer.raw_data(), buffer.raw_data(), size_t(buffer.numel()), type, ncclSum, state_->comm,
                           state_->stream),
             "ncclAllReduce");
  return std::make_unique<NcclPending>(std::move(buffer), *this, *state_, bootstrap_.timeout_s());
}

void NcclCommunicator::broadcast(Tensor buffer, int root) {
  if (buffer.device().is_cpu()) return bootstrap_.broadcast(std::move(buffer), root);
  check(root >= 0 && root < size(), "NcclCommunicator: broadcast from rank ", root, " of ", size());
  const ncclDataType_t type = nccl_type(buffer, device_, "broadcast");
  check_cuda(cudaSetDevice(device_.index), "cudaSetDevice");
  check_nccl(ncclBroadcast(buffer.raw_data(), buffer.raw_data(), size_t(buffer.numel()), type, root, state_->comm,
                           state_->stream),
             "ncclBroadcast");
  NcclPending(std::move(buffer), *this, *state_, bootstrap_.timeout_s()).wait();
}

void NcclCommunicator::abort(const std::string& why) {
  if (state_->comm != nullptr) ncclCommAbort(state_->comm);  // frees ranks blocked inside NCCL kernels
  state_->comm = nullptr;
  bootstrap_.abort(why);
}

}  // namespace fuselab
