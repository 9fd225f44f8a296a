// The flow-level model: alone, a collective takes the analytical time; concurrent collectives
// on shared links slow each other and on disjoint links do not; oversubscription, ECMP
// collisions, failed and degraded links and background traffic cost what they should.
#include "myriad/netmodel/flow_model.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "tests/netmodel/test_clusters.h"

namespace myriad::netmodel {
namespace {

using testing::DgxCluster;

constexpr std::uint64_t kGiB = 1ULL << 30;

std::vector<int> Range(int first, int count, int stride = 1) {
  std::vector<int> gpus;
  for (int i = 0; i < count; ++i) gpus.push_back(first + i * stride);
  return gpus;
}

struct Job {
  CollectiveRequest request;
  std::vector<int> gpus;
};

Job MakeJob(CollectiveOp op, std::uint64_t bytes, std::vector<int> gpus) {
  Job j;
  j.request.op = op;
  j.request.bytes = bytes;
  j.request.ranks = static_cast<int>(gpus.size());
  j.gpus = std::move(gpus);
  return j;
}

// The 128 GPUs of 16 nodes on 4 leaves of 4, in an order that changes leaf at every node:
// node 0, 4, 8, 12, 1, 5, ..., all 8 GPUs of each.
std::vector<int> StripedOverFourLeaves() {
  std::vector<int> gpus;
  for (int r = 0; r < 4; ++r)
    for (int leaf = 0; leaf < 4; ++leaf)
      for (int g = 0; g < 8; ++g) gpus.push_back((leaf * 4 + r) * 8 + g);
  return gpus;
}

Job RingOnly(Job job) {
  job.request.algorithms = AlgorithmSet();
  job.request.algorithms.insert(Algorithm::kRing);
  return job;
}

// Runs `jobs` together from time 0; returns each one's time and, through `alone`, the
// analytical time of each.
std::vector<double> RunTogether(const Cluster& cluster, const std::vector<Job>& jobs,
                                const FlowOptions& options = {},
                                std::vector<double>* alone = nullptr) {
  CollectiveModel analytical(cluster);
  auto flow = FlowModel::Create(cluster, options);
  EXPECT_TRUE(flow.ok()) << flow.status().message();
  std::vector<std::uint64_t> ids;
  for (const Job& job : jobs) {
    auto est = analytical.Estimate(job.request, analytical.LayoutOf(job.gpus));
    EXPECT_TRUE(est.ok()) << est.status().message();
    if (alone) alone->push_back(est->time_us);
    auto id = (*flow)->Start(0, job.request, *est, job.gpus);
    EXPECT_TRUE(id.ok()) << id.status().message();
    ids.push_back(*id);
  }
  std::vector<double> times(jobs.size(), -1);
  std::vector<FlowModel::Done> done;
  for (size_t left = jobs.size(); left > 0;) {
    const double t = (*flow)->NextEventUs();
    if (t == kUnbounded) break;
    done.clear();
    (*flow)->AdvanceTo(t, &done);
    for (const FlowModel::Done& d : done)
      for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] == d.id) {
          times[i] = d.time_us;
          --left;
        }
  }
  return times;
}

double Alone(const Cluster& cluster, const Job& job, double* analytical = nullptr,
             const FlowOptions& options = {}) {
  std::vector<double> a;
  const double t = RunTogether(cluster, {job}, options, &a)[0];
  if (analytical) *analytical = a[0];
  return t;
}

// Every collective of the analytical model's accuracy tests, uncontended: flow = analytical
// within 5% (the per-algorithm traffic puts no more on any link than the analytical
// bottleneck allows).
TEST(FlowModelTest, UncontendedCollectivesTakeTheAnalyticalTime) {
  const Cluster dgx = DgxCluster("h100-sxm", 1);
  const Cluster a100 = DgxCluster("a100-sxm-80gb", 1);
  const Cluster two = DgxCluster("h100-sxm", 2);
  const Cluster sixteen = DgxCluster("h100-sxm", 16);
  const Cluster many = DgxCluster("h100-sxm", 128);
  struct Case {
    const char* what;
    const Cluster* cluster;
    Job job;
    AlgorithmSet algorithms = AlgorithmSet::All();
    FlowOptions options = {};
  };
  std::vector<Case> cases;
  for (std::uint64_t bytes = 8; bytes <= 8 * kGiB; bytes *= 64)
    cases.push_back(
        {"DGX H100 allreduce", &dgx, MakeJob(CollectiveOp::kAllReduce, bytes, Range(0, 8))});
  AlgorithmSet ring;
  ring.insert(Algorithm::kRing);
  for (CollectiveOp op :
       {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter})
    cases.push_back({"DGX H100 ring", &dgx, MakeJob(op, kGiB, Range(0, 8)), ring});
  cases.push_back(
      {"DGX A100 allreduce", &a100, MakeJob(CollectiveOp::kAllReduce, 8 * kGiB, Range(0, 8))});
  for (int g = 5; g <= 8; ++g)
    cases.push_back(
        {"NVLS by GPU count", &dgx, MakeJob(CollectiveOp::kAllReduce, kGiB, Range(0, g))});
  cases.push_back({"CX-7 sendrecv", &two, MakeJob(CollectiveOp::kSendRecv, kGiB, {0, 8})});
  cases.push_back(
      {"16-node allreduce", &sixteen, MakeJob(CollectiveOp::kAllReduce, 4 * kGiB, Range(0, 128))});
  cases.push_back({"16-node ring allreduce", &sixteen,
                   MakeJob(CollectiveOp::kAllReduce, 4 * kGiB, Range(0, 128)), ring});
  cases.push_back(
      {"16-node allgather", &sixteen, MakeJob(CollectiveOp::kAllGather, 4 * kGiB, Range(0, 128))});
  cases.push_back(
      {"dp across 16 nodes", &sixteen, MakeJob(CollectiveOp::kAllReduce, kGiB, Range(3, 16, 8))});
  cases.push_back({"alltoall over 16 nodes", &sixteen,
                   MakeJob(CollectiveOp::kAllToAll, 4 * kGiB, Range(0, 128))});
  cases.push_back({"alltoall over 128 nodes, 1 GPU each", &many,
                   MakeJob(CollectiveOp::kAllToAll, kGiB, Range(0, 128, 8))});
  for (Case& c : cases) {
    c.job.request.algorithms = c.algorithms;
    double analytical = 0;
    const double flow = Alone(*c.cluster, c.job, &analytical, c.options);
    EXPECT_NEAR(flow / analytical, 1.0, 0.05)
        << c.what << " " << ToString(c.job.request.op) << " " << c.job.request.bytes << " B on "
        << c.job.gpus.size() << " GPUs: flow " << flow << " us, analytical " << analytical;
  }
}

// On an adaptively routed fabric (InfiniBand, the default of the bundled Quantum switches)
// every algorithm's traffic spreads over the spines, so the flow model agrees with the
// analytical one at any scale: 128 nodes (4 leaves per rail) and 2,048 (64 leaves per rail).
TEST(FlowModelTest, AdaptiveRoutingMatchesTheAnalyticalModelAtAnyScale) {
  AlgorithmSet ring, tree, nvls_tree;
  ring.insert(Algorithm::kRing);
  tree.insert(Algorithm::kTree);
  nvls_tree.insert(Algorithm::kNvlsTree);
  for (int nodes : {128, 2048}) {
    const Cluster c = DgxCluster("h100-sxm", nodes);
    ASSERT_EQ(c.scale_out.routing, Routing::kAdaptive);
    const std::vector<int> all = Range(0, nodes * 8);
    std::vector<std::pair<Job, AlgorithmSet>> jobs = {
        {MakeJob(CollectiveOp::kAllReduce, 8 * kGiB, all), ring},
        {MakeJob(CollectiveOp::kAllReduce, 8 * kGiB, all), tree},
        {MakeJob(CollectiveOp::kAllReduce, 8 * kGiB, all), nvls_tree},
        {MakeJob(CollectiveOp::kReduceScatter, 8 * kGiB, all), ring},
        {MakeJob(CollectiveOp::kAllGather, 2 * kGiB, all), ring},
        {MakeJob(CollectiveOp::kAllReduce, kGiB, Range(0, nodes, 8)), AlgorithmSet::All()}};
    for (auto& [job, algorithms] : jobs) {
      job.request.algorithms = algorithms;
      double analytical = 0;
      const double flow = Alone(c, job, &analytical);
      EXPECT_NEAR(flow / analytical, 1.0, 0.05)
          << nodes << " nodes, " << ToString(job.request.op) << " on " << job.gpus.size()
          << " GPUs: flow " << flow << " us, analytical " << analytical;
    }
  }
}

// Two 2-node AllReduces of different communicators on the same GPUs (so the same NICs) each
// take twice as long as alone; on GPUs of other NICs, no slowdown.
TEST(FlowModelTest, SharedNicHalvesEachDisjointNicsDoNot) {
  const Cluster c = DgxCluster("h100-sxm", 2);
  const Job a = MakeJob(CollectiveOp::kAllReduce, 4 * kGiB, {0, 8});
  const Job b = MakeJob(CollectiveOp::kAllReduce, 4 * kGiB, {0, 8});  // another communicator
  const Job d = MakeJob(CollectiveOp::kAllReduce, 4 * kGiB, {1, 9});  // NIC 1
  const double alone = Alone(c, a);
  const std::vector<double> shared = RunTogether(c, {a, b});
  EXPECT_NEAR(shared[0] / alone, 2.0, 0.2);
  EXPECT_NEAR(shared[1] / alone, 2.0, 0.2);
  const std::vector<double> disjoint = RunTogether(c, {a, d});
  EXPECT_NEAR(disjoint[0] / alone, 1.0, 0.01);
  EXPECT_NEAR(disjoint[1] / alone, 1.0, 0.01);
}

// A two-tier Clos of 4 leaves (4 nodes each): an AllReduce over every GPU whose ring visits
// the nodes leaf by leaf in turn crosses the spine on every hop, so 2:1 oversubscription
// halves its bus bandwidth. A rail-optimized fabric whose rails each fit one leaf keeps all
// traffic inside rails and does not notice oversubscription.
TEST(FlowModelTest, OversubscriptionHalvesCrossRackRingsNotRails) {
  auto clos = [](double oversubscription) {
    Cluster c = DgxCluster("h100-sxm", 16);
    c.scale_out.topology = ScaleOutTopology::kClos;
    c.scale_out.nodes_per_leaf = 4;
    c.scale_out.oversubscription = oversubscription;
    return c;
  };
  const Job job = RingOnly(MakeJob(CollectiveOp::kAllReduce, 8 * kGiB, StripedOverFourLeaves()));
  const double full = Alone(clos(1.0), job);  // adaptive routing, the cluster's default
  const double half = Alone(clos(2.0), job);
  EXPECT_NEAR(full / half, 0.5, 0.05);  // busbw ratio, within 10% of a half

  Cluster rails = DgxCluster("h100-sxm", 16);
  rails.scale_out.nodes_per_leaf = 16;
  rails.scale_out.oversubscription = 2.0;
  double analytical = 0;
  const double in_rails = Alone(rails, job, &analytical);
  EXPECT_NEAR(in_rails / analytical, 1.0, 0.05);
}

// AllToAll over N nodes with one 400G NIC per GPU: bus bandwidth tends to the NIC's data rate
// as N grows (from above: the share of traffic that stays on NVLink shrinks as 1/N).
TEST(FlowModelTest, AllToAllTendsToThePerNicRate) {
  double previous = 0;
  for (int nodes : {2, 4, 8, 16}) {
    const Cluster c = DgxCluster("h100-sxm", nodes);
    const Job job = MakeJob(CollectiveOp::kAllToAll, 8 * kGiB, Range(0, nodes * 8));
    const double us = Alone(c, job);
    const double n = nodes * 8.0;
    const double busbw = 8.0 * kGiB / (us * 1e-6) * (n - 1) / n;
    if (previous > 0) {
      EXPECT_LT(busbw, previous) << nodes << " nodes";
    }
    previous = busbw;
  }
  const double nic = DgxCluster("h100-sxm", 2).nic_data_bandwidth();
  EXPECT_NEAR(previous / nic, 1.0, 0.1);
}

// ECMP hashes each connection onto one spine and some collide; adaptive routing spreads them
// evenly, and so is never slower. More queue pairs per connection spread ECMP's load.
TEST(FlowModelTest, EcmpCollisionsCostWhatAdaptiveRoutingAvoids) {
  Cluster adaptive = DgxCluster("h100-sxm", 16);
  adaptive.scale_out.topology = ScaleOutTopology::kClos;
  adaptive.scale_out.nodes_per_leaf = 4;
  Cluster ecmp = adaptive;
  ecmp.scale_out.routing = Routing::kEcmp;
  const Job job = MakeJob(CollectiveOp::kAllToAll, 8 * kGiB, Range(0, 128));
  const double hashed = Alone(ecmp, job);
  const double spread = Alone(adaptive, job);
  EXPECT_GT(hashed, spread * 1.05);
  // Deterministic: the same run gives the same time.
  EXPECT_EQ(Alone(ecmp, job), hashed);
}

// A ring whose node order crosses the spine at every hop (a Clos of 4 nodes per leaf, ranks
// striped over the leaves): under ECMP each node's 8 rails x channels x QPs connections hash
// onto 32 spines and collide; with more QPs per connection the load evens out towards what
// adaptive routing achieves (the analytical time).
TEST(FlowModelTest, MoreQueuePairsPerConnectionSoftenEcmpCollisions) {
  Cluster c = DgxCluster("h100-sxm", 16);
  c.scale_out.topology = ScaleOutTopology::kClos;
  c.scale_out.nodes_per_leaf = 4;
  const Job job = RingOnly(MakeJob(CollectiveOp::kAllGather, 2 * kGiB, StripedOverFourLeaves()));
  double analytical = 0;
  const double adaptive = Alone(c, job, &analytical);
  EXPECT_NEAR(adaptive / analytical, 1.0, 0.05);
  c.scale_out.routing = Routing::kEcmp;
  c.scale_out.qps_per_connection = 1;
  const double one_qp = Alone(c, job);
  c.scale_out.qps_per_connection = 16;
  const double many_qps = Alone(c, job);
  EXPECT_GT(one_qp, adaptive * 1.2);
  EXPECT_LT(many_qps, one_qp);
  EXPECT_GE(many_qps, adaptive * 0.999);
}

// A NIC at half rate doubles a collective that relies on it; a failed spine uplink reroutes
// (ECMP); a failed NIC leaves no route, and the error names the link.
TEST(FlowModelTest, DegradedAndFailedLinks) {
  const Cluster c = DgxCluster("h100-sxm", 2);
  const Job job = MakeJob(CollectiveOp::kAllReduce, 4 * kGiB, {0, 8});
  const double alone = Alone(c, job);
  FlowOptions slow;
  slow.links.push_back({"nic0.tx", 0.5});
  EXPECT_NEAR(Alone(c, job, nullptr, slow) / alone, 2.0, 0.05);

  FlowOptions dead;
  dead.links.push_back({"nic0.tx", 0});
  auto flow = FlowModel::Create(c, dead);
  ASSERT_TRUE(flow.ok());
  CollectiveModel analytical(c);
  auto est = analytical.Estimate(job.request, analytical.LayoutOf(job.gpus));
  auto started = (*flow)->Start(0, job.request, *est, job.gpus);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.status().message(), "no route from GPU 0 to GPU 8: link nic0.tx has failed");

  FlowOptions typo;
  typo.links.push_back({"nic99999.tx", 0.5});
  EXPECT_NE(FlowModel::Create(c, typo).status().message().find("no link matches 'nic99999.tx'"),
            std::string::npos);

  Cluster clos = DgxCluster("h100-sxm", 8);
  clos.scale_out.topology = ScaleOutTopology::kClos;
  clos.scale_out.nodes_per_leaf = 4;
  clos.scale_out.routing = Routing::kEcmp;
  FlowOptions spine_down;
  spine_down.links.push_back({"leaf0.up*", 0});
  auto none = FlowModel::Create(clos, spine_down);
  ASSERT_TRUE(none.ok());
  const Job cross = MakeJob(CollectiveOp::kAllReduce, kGiB, {0, 32});
  CollectiveModel clos_model(clos);
  auto cross_est = clos_model.Estimate(cross.request, clos_model.LayoutOf(cross.gpus));
  EXPECT_NE((*none)
                ->Start(0, cross.request, *cross_est, cross.gpus)
                .status()
                .message()
                .find("every spine link between leaf 0 and leaf 1 has failed"),
            std::string::npos);
  FlowOptions one_down;
  one_down.links.push_back({"leaf0.up0", 0});
  double analytical_cross = 0;
  EXPECT_NEAR(Alone(clos, cross, &analytical_cross, one_down) / analytical_cross, 1.0, 0.05);
}

// Other jobs: half of every uplink taken slows a spine-crossing transfer twofold; another
// job's endless AllReduce on the same NICs takes half of them.
TEST(FlowModelTest, BackgroundTraffic) {
  Cluster c = DgxCluster("h100-sxm", 8);
  c.scale_out.topology = ScaleOutTopology::kClos;
  c.scale_out.nodes_per_leaf = 4;
  const Job cross = MakeJob(CollectiveOp::kSendRecv, 4 * kGiB, {0, 32});
  const double alone = Alone(c, cross);
  // One flow alone does not fill a trunk: load it enough that its share drops below a NIC.
  FlowOptions loaded;
  BackgroundTraffic load;
  load.links = "leaf*.up*";
  load.load = 0.99;
  loaded.background.push_back(load);
  EXPECT_GT(Alone(c, cross, nullptr, loaded), alone * 1.5);

  const Cluster two = DgxCluster("h100-sxm", 2);
  const Job job = MakeJob(CollectiveOp::kAllReduce, 4 * kGiB, {0, 8});
  FlowOptions other;
  BackgroundTraffic bg;
  bg.op = CollectiveOp::kAllReduce;
  bg.gpus = {0, 8};
  other.background.push_back(bg);
  EXPECT_NEAR(Alone(two, job, nullptr, other) / Alone(two, job), 2.0, 0.1);
}

}  // namespace
}  // namespace myriad::netmodel
