// The flow-level network model's speed: flow starts and ends per second under max-min
// re-sharing, and a whole ring AllReduce over 1,024 nodes of 8 GPUs. Figures are recorded in
// docs/performance.md.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "myriad/netmodel/flow_model.h"
#include "tests/netmodel/test_clusters.h"

namespace myriad::netmodel {
namespace {

// Flows between pseudo-random GPU pairs of a 128-node rail-optimized cluster (4 leaves per
// rail, ECMP), `concurrent` in flight at a time: each end starts the next. Counts flow starts
// and ends.
void FlowEvents(benchmark::State& state) {
  const int concurrent = static_cast<int>(state.range(0));
  Cluster cluster = testing::DgxCluster("h100-sxm", 128);
  cluster.scale_out.routing = Routing::kEcmp;
  const Topology topology = Topology::Build(cluster);
  std::vector<double> capacities;
  for (int id = 0; id < topology.link_count(); ++id)
    capacities.push_back(topology.link(id).capacity);
  std::uint64_t events = 0;
  for (auto _ : state) {
    FlowNetwork net(capacities);
    std::uint64_t seed = 12345;
    auto next_random = [&] {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      return seed >> 33;
    };
    std::vector<int> route;
    auto start = [&](double now) {
      const int src = static_cast<int>(next_random() % 1024);
      int dst = static_cast<int>(next_random() % 1024);
      if (dst == src) dst = (dst + 1) % 1024;
      (void)topology.Route(src, dst, next_random(), &route);
      net.Add(now, route, 1e6 * static_cast<double>(1 + next_random() % 64));
    };
    for (int i = 0; i < concurrent; ++i) start(0);
    std::vector<int> done;
    const int total = 20000;
    int started = concurrent;
    while (net.active() > 0) {
      const double t = net.NextFinish();
      done.clear();
      net.AdvanceTo(t, &done);
      for (size_t i = 0; i < done.size() && started < total; ++i, ++started) start(t);
    }
    events = net.events();
  }
  state.counters["flow_events_per_s"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(FlowEvents)->Arg(16)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();

// One ring AllReduce of 8 GiB over all 8,192 GPUs of 1,024 nodes (every GPU's ring flow, and
// the node boundaries spread over the 8 rails), from start to the last flow's end.
void RingAllReduce1024Nodes(benchmark::State& state) {
  const Cluster cluster = testing::DgxCluster("h100-sxm", 1024);
  CollectiveRequest request;
  request.op = CollectiveOp::kAllReduce;
  request.bytes = 8ULL << 30;
  request.ranks = cluster.total_gpus();
  request.algorithms = AlgorithmSet();
  request.algorithms.insert(Algorithm::kRing);
  const CollectiveModel analytical(cluster);
  const CollectiveEstimate estimate = analytical.Estimate(request).value();
  std::vector<int> gpus;
  for (int g = 0; g < cluster.total_gpus(); ++g) gpus.push_back(g);
  double time_us = 0;
  std::uint64_t flows = 0;
  for (auto _ : state) {
    auto model = FlowModel::Create(cluster, FlowOptions{}).value();
    (void)model->Start(0, request, estimate, gpus);
    flows = static_cast<std::uint64_t>(model->network().active());
    std::vector<FlowModel::Done> done;
    while (done.empty()) model->AdvanceTo(model->NextEventUs(), &done);
    time_us = done[0].time_us;
  }
  state.counters["flows"] = static_cast<double>(flows);
  state.counters["predicted_us"] = time_us;
  state.counters["analytical_us"] = estimate.time_us;
}
BENCHMARK(RingAllReduce1024Nodes)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace myriad::netmodel

BENCHMARK_MAIN();
