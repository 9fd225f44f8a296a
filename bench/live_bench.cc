// Rank folding of live runs (`myriad run --fold dp`): one process's op stream replayed by
// mirrors. A thread plays the process (the wire protocol, as the shims speak it): it joins the
// world's communicator, then sends steps of a kernel and an AllReduce over the world, and
// synchronises at the end; every other rank of the world is a mirror of it. Items are ops
// simulated, mirrors included, so the figure is ops per second of the whole folded run.
//
//   ./build/bench/live_bench
#include <benchmark/benchmark.h>

#include <thread>
#include <vector>

#include "myriad/emulator/engine.h"
#include "myriad/emulator/live.h"
#include "protocol/client.h"
#include "tests/netmodel/test_clusters.h"

namespace myriad::emulator {
namespace {

constexpr int kSteps = 200;

wire::WireOp Kernel() {
  wire::WireOp op;
  op.kind = static_cast<std::uint8_t>(OpKind::kKernel);
  op.name = 1;
  op.duration_ps = FromMicros(100);
  return op;
}

wire::WireOp AllReduce() {
  wire::WireOp op;
  op.kind = static_cast<std::uint8_t>(OpKind::kCollective);
  op.coll = static_cast<std::uint8_t>(netmodel::CollectiveOp::kAllReduce);
  op.comm = 2;
  op.bytes = 64 << 20;
  op.count = op.bytes / 4;
  return op;
}

// The live process: joins the world ("world", rank 0 of `world`), runs the steps, syncs.
void PlayProcess(const std::string& path, int world) {
  wire::Client client;
  if (!client.Connect(path) || !client.SendHello(0, 1) ||
      !client.SendNames({{1, "gemm"}, {2, "world"}}))
    return;
  wire::WireOp init;
  init.kind = static_cast<std::uint8_t>(wire::WireKind::kCommInit);
  init.comm = 2;
  init.peer = 0;
  init.count = static_cast<std::uint64_t>(world);
  init.flags = wire::kWantsReply;
  wire::Reply reply;
  if (!client.SendOps(0, &init, 1) || !client.ReadReply(reply)) return;
  std::vector<wire::WireOp> ops;
  for (int i = 0; i < kSteps; ++i) {
    ops.push_back(Kernel());
    ops.push_back(AllReduce());
  }
  wire::WireOp sync;
  sync.kind = static_cast<std::uint8_t>(OpKind::kDeviceSync);
  sync.flags = wire::kWantsReply;
  ops.push_back(sync);
  if (!client.SendOps(0, ops.data(), static_cast<std::uint32_t>(ops.size())) ||
      !client.ReadReply(reply))
    return;
  client.Close();
}

void BM_MirroredWorld(benchmark::State& state) {
  const int world = static_cast<int>(state.range(0));
  const auto cluster = netmodel::testing::DgxCluster("h100-sxm", world / 8);
  std::uint64_t ops = 0;
  for (auto _ : state) {
    LiveOptions options;
    auto plan = PlanFold("", {"dp"}, world);
    if (!plan.ok()) {
      state.SkipWithError(plan.status().message().c_str());
      return;
    }
    options.fold = *plan;
    auto workload = LiveWorkload::Start(options);
    if (!workload.ok()) {
      state.SkipWithError(workload.status().message().c_str());
      return;
    }
    std::thread process(PlayProcess, (*workload)->socket_path(), world);
    auto result = RunEngine(**workload, cluster, EngineOptions());
    process.join();
    if (!result.ok()) {
      state.SkipWithError(result.status().message().c_str());
      return;
    }
    ops += result->simulated_ops;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(ops));
}
// Wall time: the engine and the I/O thread do the work, not the benchmark's thread.
BENCHMARK(BM_MirroredWorld)
    ->Arg(8)
    ->Arg(64)
    ->Arg(512)
    ->Arg(4096)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace myriad::emulator

BENCHMARK_MAIN();
