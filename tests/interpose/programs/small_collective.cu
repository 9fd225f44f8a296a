// Two processes, one GPU each (device by LOCAL_RANK). Both start a large AllReduce (timed only);
// rank 1 synchronises on it before its next call, a small AllReduce whose data Myriad
// exchanges, while rank 0 makes that call at once. Rank 0 waits for rank 1's data, which
// comes only once virtual time has passed its own clock: it must not hold virtual time back
// meanwhile, and it must resume at rank 1's clock, the call's latest. Prints
// "rank R calls the small all-reduce at C us", "rank 0 resumes at A us" (since the
// communicator's creation, which both leave at the same time) and the reduced value.
// (tests/interpose/run_test.cc)
#include <nccl.h>

#include <chrono>
#include <cstdio>

#include "examples/common/example_common.h"

int main() {
  const ex::Launch launch = ex::launch_from_env();
  CUDACHECK(cudaSetDevice(launch.local_rank));
  const ncclUniqueId id = ex::exchange_unique_id("small_collective", launch.rank, launch.size);
  constexpr size_t kLarge = 1 << 24;  // floats: 64 MiB, far above the exchanged size
  float* large = nullptr;
  int* small = nullptr;
  CUDACHECK(cudaMalloc(&large, kLarge * sizeof(float)));
  CUDACHECK(cudaMalloc(&small, sizeof(int)));
  const int mine = launch.rank + 1;
  CUDACHECK(cudaMemcpy(small, &mine, sizeof mine, cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CUDACHECK(cudaStreamCreate(&stream));
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, launch.size, id, launch.rank));
  const auto start = std::chrono::steady_clock::now();
  const auto since_start = [&start] {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
        .count();
  };
  NCCLCHECK(ncclAllReduce(large, large, kLarge, ncclFloat, ncclSum, comm, stream));
  if (launch.rank == 1) CUDACHECK(cudaStreamSynchronize(stream));
  std::printf("rank %d calls the small all-reduce at %.3f us\n", launch.rank, since_start());
  NCCLCHECK(ncclAllReduce(small, small, 1, ncclInt, ncclSum, comm, stream));
  if (launch.rank == 0) std::printf("rank 0 resumes at %.3f us\n", since_start());
  int sum = 0;
  CUDACHECK(cudaMemcpy(&sum, small, sizeof sum, cudaMemcpyDeviceToHost));
  std::printf("rank %d reads %d\n", launch.rank, sum);
  NCCLCHECK(ncclCommDestroy(comm));
  return sum == 3 ? 0 : 1;
}
