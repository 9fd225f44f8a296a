// Cost of one analytical collective estimate (all algorithms and protocols considered, the
// fastest chosen), on communicators up to 16,384 ranks.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "myriad/netmodel/collective.h"
#include "tests/netmodel/test_clusters.h"

namespace {

using myriad::netmodel::CollectiveModel;
using myriad::netmodel::CollectiveOp;
using myriad::netmodel::CollectiveRequest;

void BM_Estimate(benchmark::State& state, CollectiveOp op) {
  const int ranks = static_cast<int>(state.range(0));
  const CollectiveModel model(myriad::netmodel::testing::DgxCluster("h100-sxm", ranks / 8));
  CollectiveRequest request;
  request.op = op;
  request.ranks = ranks;
  std::uint64_t bytes = 8;
  for (auto _ : state) {
    request.bytes = bytes;
    auto estimate = model.Estimate(request);
    benchmark::DoNotOptimize(estimate);
    bytes = bytes < (std::uint64_t{8} << 30) ? bytes * 2 : 8;  // sweep sizes, as a test would
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK_CAPTURE(BM_Estimate, allreduce, CollectiveOp::kAllReduce)->Arg(8)->Arg(1024)->Arg(16384);
BENCHMARK_CAPTURE(BM_Estimate, allgather, CollectiveOp::kAllGather)->Arg(16384);
BENCHMARK_CAPTURE(BM_Estimate, alltoall, CollectiveOp::kAllToAll)->Arg(16384);

}  // namespace

BENCHMARK_MAIN();
