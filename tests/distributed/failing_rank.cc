// A two-rank program in which rank 1 fails while rank 0 waits in an all-reduce: by throwing
// (`failing_rank throw`) or by hanging (`failing_rank hang`). data_parallel_test.sh checks that
// every rank then exits with a clear error instead of waiting for ever.
#include <chrono>
#include <string>
#include <thread>

#include "distributed/mpi_communicator.h"
#include "tensor/factories.h"

int main(int argc, char** argv) {
  using namespace fuselab;
  MpiCommunicator world(&argc, &argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  return run_or_abort(world, [&] {
    check(mode == "throw" || mode == "hang", "failing_rank: the mode must be throw or hang, got '", mode, "'");
    if (world.rank() == 1) {
      if (mode == "throw") fail("injected failure on purpose");
      std::this_thread::sleep_for(std::chrono::hours(1));
    }
    world.all_reduce_sum(ones({4}));
    return 0;
  });
}
