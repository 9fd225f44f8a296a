// Two processes, one GPU each (device by LOCAL_RANK), that AllReduce twice; rank EXIT_RANK
// exits with status EXIT_STATUS (or, with EXIT_SIGNAL, kills itself) between the two, while
// its peer goes on and waits. The peer must never hear that its second AllReduce succeeded.
// Prints "first allreduce done" and "second allreduce done: <error>" on each rank that gets
// there. (tests/interpose/run_test.cc)
#include <nccl.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>

#include "examples/common/example_common.h"

int main() {
  const ex::Launch launch = ex::launch_from_env();
  const int exit_rank = std::atoi(std::getenv("EXIT_RANK") ? std::getenv("EXIT_RANK") : "1");
  const int exit_status = std::atoi(std::getenv("EXIT_STATUS") ? std::getenv("EXIT_STATUS") : "3");
  const char* exit_signal = std::getenv("EXIT_SIGNAL");
  CUDACHECK(cudaSetDevice(launch.local_rank));
  const ncclUniqueId id = ex::exchange_unique_id("peer_exit", launch.rank, launch.size);
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, launch.size, id, launch.rank));
  float* buffer = nullptr;
  CUDACHECK(cudaMalloc(&buffer, 1 << 24));
  cudaStream_t stream;
  CUDACHECK(cudaStreamCreate(&stream));
  NCCLCHECK(ncclAllReduce(buffer, buffer, 1 << 22, ncclFloat, ncclSum, comm, stream));
  CUDACHECK(cudaStreamSynchronize(stream));
  std::printf("first allreduce done\n");
  std::fflush(stdout);
  if (launch.rank == exit_rank) {
    if (exit_signal) ::raise(std::atoi(exit_signal));
    return exit_status;
  }
  ncclAllReduce(buffer, buffer, 1 << 22, ncclFloat, ncclSum, comm, stream);
  const cudaError_t e = cudaStreamSynchronize(stream);
  std::printf("second allreduce done: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
