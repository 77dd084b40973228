#include "distributed/mpi_communicator.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "runtime/settings.h"

namespace fuselab {
namespace {

// Throws naming the MPI call and MPI's own description of what went wrong.
void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  fail(call, " failed: ", std::string(text, size_t(length)));
}

MPI_Datatype mpi_type(const Tensor& buffer, const char* what) {
  check(buffer.device().is_cpu(), "MpiCommunicator: ", what, " needs a CPU tensor, got one on ", buffer.device(),
        " (NcclCommunicator reduces GPU tensors)");
  if (buffer.dtype() == DType::Float32) return MPI_FLOAT;
  if (buffer.dtype() == DType::Float64) return MPI_DOUBLE;
  fail("MpiCommunicator: ", what, " needs float32 or float64, got ", buffer.dtype(), " of shape ", buffer.shape());
}

// Polls `request` until it completes. Polling (rather than MPI_Wait) lets the wait give up after
// the timeout, and sleeping between polls leaves the core to ranks sharing it.
void wait_for(MPI_Request& request, const char* what, MpiCommunicator& comm, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  for (int polls = 0;; ++polls) {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    if (Clock::now() > deadline) {
      comm.abort(std::string(what) + " did not complete within " + std::to_string(int(timeout_s)) +
                 " s (another rank failed or is stuck)");
    }
    if (polls < 1000) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

class MpiPending final : public PendingCollective {
 public:
  MpiPending(Tensor buffer, MpiCommunicator& comm, double timeout_s)
      : buffer_(std::move(buffer)), comm_(comm), timeout_s_(timeout_s) {
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, buffer_.raw_data(), int(buffer_.numel()),
                             mpi_type(buffer_, "all_reduce_sum"), MPI_SUM, MPI_COMM_WORLD, &request_),
              "MPI_Iallreduce");
  }
  ~MpiPending() override {
    if (request_ != MPI_REQUEST_NULL) wait();
  }
  void wait() override { wait_for(request_, "MPI_Iallreduce", comm_, timeout_s_); }
  void progress() override {
    int done = 0;
    if (request_ != MPI_REQUEST_NULL) check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Iallreduce");
  }

 private:
  Tensor buffer_;  // kept alive while MPI writes into it
  MpiCommunicator& comm_;
  double timeout_s_;
  MPI_Request request_ = MPI_REQUEST_NULL;
};

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value ? std::atoi(value) : fallback;
}

}  // namespace

double MpiCommunicator::default_timeout_s() { return runtime::settings().dist_timeout_s; }

MpiCommunicator::MpiCommunicator(int* argc, char*** argv, double timeout_s) : timeout_s_(timeout_s) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  check(!initialized, "MpiCommunicator: MPI is already initialised in this process");
  int provided = 0;  // only the main thread calls MPI; OpenMP threads never do
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  // errors come back as codes
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  local_rank_ = env_int("OMPI_COMM_WORLD_LOCAL_RANK", rank_);
  local_size_ = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", size_);
}

MpiCommunicator::~MpiCommunicator() { MPI_Finalize(); }

std::unique_ptr<PendingCollective> MpiCommunicator::start_all_reduce_sum(Tensor buffer) {
  return std::make_unique<MpiPending>(std::move(buffer), *this, timeout_s_);
}

void MpiCommunicator::broadcast(Tensor buffer, int root) {
  mpi_type(buffer, "broadcast");  // checks device and dtype
  broadcast_bytes(buffer.raw_data(), buffer.nbytes(), root);
}

void MpiCommunicator::broadcast_bytes(void* data, size_t bytes, int root) {
  check(root >= 0 && root < size_, "MpiCommunicator: broadcast from rank ", root, " of ", size_);
  check(bytes <= size_t(INT_MAX), "MpiCommunicator: broadcast of ", bytes, " bytes (MPI counts are int)");
  MPI_Request request;
  check_mpi(MPI_Ibcast(data, int(bytes), MPI_BYTE, root, MPI_COMM_WORLD, &request), "MPI_Ibcast");
  wait_for(request, "MPI_Ibcast", *this, timeout_s_);
}

void MpiCommunicator::abort(const std::string& why) {
  std::fprintf(stderr, "\nfuselab: rank %d of %d: %s; stopping every rank\n", rank_, size_, why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort does not return; this is for the compiler
}

}  // namespace fuselab
