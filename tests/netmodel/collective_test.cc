// Behaviour of the analytical model: which algorithm runs where, how time responds to the
// cluster. Accuracy against published figures is in tests/emulator/cli/accuracy_test.cc.
#include "myriad/netmodel/collective.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "tests/netmodel/test_clusters.h"

namespace myriad::netmodel {
namespace {

using testing::DgxCluster;

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = 1024 * kKiB;
constexpr std::uint64_t kGiB = 1024 * kMiB;

CollectiveEstimate Predict(const Cluster& cluster, CollectiveOp op, std::uint64_t bytes,
                           int ranks = 0, const char* algo = nullptr, const char* proto = nullptr) {
  CollectiveRequest r;
  r.op = op;
  r.bytes = bytes;
  r.ranks = ranks ? ranks : cluster.total_gpus();
  if (algo) r.algorithms = ParseNcclAlgo(algo).value();
  if (proto) r.protocols = ParseNcclProto(proto).value();
  auto e = CollectiveModel(cluster).Estimate(r);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? *e : CollectiveEstimate{};
}

TEST(CollectiveModelTest, TimeGrowsWithSizeForEveryCollective) {
  const Cluster clusters[] = {DgxCluster("h100-sxm", 1), DgxCluster("h100-sxm", 16),
                              DgxCluster("a100-sxm-80gb", 1)};
  for (const Cluster& c : clusters) {
    for (int i = 0; i < kNumCollectiveOps; ++i) {
      const auto op = static_cast<CollectiveOp>(i);
      // Flat where NCCL drops channels as fast as the size shrinks, never faster when larger.
      double previous = 0;
      for (std::uint64_t bytes = 1024; bytes <= 4 * kGiB; bytes *= 4) {
        const double t = Predict(c, op, bytes).time_us;
        EXPECT_GE(t, previous) << ToString(op) << " at " << bytes;
        previous = t;
      }
      EXPECT_GT(previous, 10 * Predict(c, op, 1024).time_us) << ToString(op);
    }
  }
}

TEST(CollectiveModelTest, EstimateIsTheSumOfItsTerms) {
  const auto e = Predict(DgxCluster("h100-sxm", 4), CollectiveOp::kAllReduce, 256 * kMiB);
  EXPECT_DOUBLE_EQ(e.time_us, e.latency_us + e.transfer_us + e.pipeline_fill_us);
  EXPECT_NEAR(e.algbw_gbps, 256.0 * kMiB / e.time_us / 1e3, 1e-9);
  EXPECT_NEAR(e.busbw_gbps, e.algbw_gbps * 2 * 31 / 32, 1e-9);
}

TEST(CollectiveModelTest, SingleNodeH100UsesNvlsForLargeAllReduce) {
  const Cluster c = DgxCluster("h100-sxm", 1);
  EXPECT_EQ(Predict(c, CollectiveOp::kAllReduce, 1 * kGiB).algorithm, Algorithm::kNvls);
  EXPECT_EQ(Predict(c, CollectiveOp::kAllReduce, 8).protocol, Protocol::kLL);
  // No NVLS on A100, nor when NCCL_ALGO excludes it.
  EXPECT_EQ(Predict(DgxCluster("a100-sxm-80gb", 1), CollectiveOp::kAllReduce, kGiB).algorithm,
            Algorithm::kRing);
  EXPECT_EQ(Predict(c, CollectiveOp::kAllReduce, kGiB, 0, "^nvls").algorithm, Algorithm::kRing);
  // Tree needs more than one scale-up domain.
  EXPECT_EQ(Predict(c, CollectiveOp::kAllReduce, kMiB, 0, "ring,tree").algorithm, Algorithm::kRing);
}

TEST(CollectiveModelTest, ProtocolSelectionIsHonoured) {
  const Cluster c = DgxCluster("h100-sxm", 1);
  const auto ll = Predict(c, CollectiveOp::kAllReduce, kGiB, 0, "ring", "LL");
  const auto simple = Predict(c, CollectiveOp::kAllReduce, kGiB, 0, "ring", "Simple");
  EXPECT_EQ(ll.protocol, Protocol::kLL);
  EXPECT_EQ(simple.protocol, Protocol::kSimple);
  // LL carries half a line of payload: about half the bandwidth.
  EXPECT_NEAR(ll.busbw_gbps / simple.busbw_gbps, 0.5, 0.02);
}

TEST(CollectiveModelTest, MultiNodeUsesTreesForSmallAllReduce) {
  const Cluster c = DgxCluster("h100-sxm", 128);
  const auto small = Predict(c, CollectiveOp::kAllReduce, 64 * kKiB);
  EXPECT_TRUE(small.algorithm == Algorithm::kTree || small.algorithm == Algorithm::kNvlsTree)
      << ToString(small.algorithm);
  // A ring's latency grows linearly with nodes, a tree's logarithmically.
  const auto ring = Predict(c, CollectiveOp::kAllReduce, 64 * kKiB, 0, "ring");
  EXPECT_GT(ring.time_us, 5 * small.time_us);
}

// The tree effect (nccl-tests issue 196): on two nodes each is the other's only child in the
// double binary tree, so a node sends the buffer once instead of twice and large AllReduces go
// past the network's ring bound; NCCL picks NVLS-tree there, and ring from more nodes on.
TEST(CollectiveModelTest, TwoNodesRunTreesPastTheRingBound) {
  const Cluster two = DgxCluster("h100-sxm", 2);
  const auto best = Predict(two, CollectiveOp::kAllReduce, 4 * kGiB);
  const auto ring = Predict(two, CollectiveOp::kAllReduce, 4 * kGiB, 0, "ring");
  EXPECT_EQ(best.algorithm, Algorithm::kNvlsTree);
  EXPECT_GT(best.busbw_gbps, 1.3 * ring.busbw_gbps);
  // The NVLS-tree's network bound halves from two domains to more.
  const Cluster four = DgxCluster("h100-sxm", 4);
  const auto two_nvls = Predict(two, CollectiveOp::kAllReduce, 4 * kGiB, 0, "nvlstree");
  const auto four_nvls = Predict(four, CollectiveOp::kAllReduce, 4 * kGiB, 0, "nvlstree");
  EXPECT_GT(two_nvls.bottleneck_gbps, 1.4 * four_nvls.bottleneck_gbps);
  EXPECT_EQ(Predict(four, CollectiveOp::kAllReduce, 4 * kGiB).algorithm, Algorithm::kRing);
}

// The scenario's NCCL release decides which algorithms exist: before 2.18 there is no
// NVLS-tree (2-node AllReduce falls back to the ring), before 2.17 no NVLS, before 2.23 no PAT.
TEST(CollectiveModelTest, OlderNcclReleasesLackTheNewerAlgorithms) {
  Cluster two = DgxCluster("h100-sxm", 2);
  two.nccl_version = ParseNcclVersion("2.18").value();
  EXPECT_EQ(Predict(two, CollectiveOp::kAllReduce, 4 * kGiB).algorithm, Algorithm::kNvlsTree);
  two.nccl_version = ParseNcclVersion("2.17.1").value();
  EXPECT_EQ(Predict(two, CollectiveOp::kAllReduce, 4 * kGiB).algorithm, Algorithm::kRing);
  Cluster one = DgxCluster("h100-sxm", 1);
  one.nccl_version = ParseNcclVersion("2.16").value();
  EXPECT_NE(Predict(one, CollectiveOp::kAllReduce, 4 * kGiB).algorithm, Algorithm::kNvls);
  Cluster per_node = DgxCluster("h100-sxm", 16);
  std::vector<int> one_per_node;
  for (int n = 0; n < 16; ++n) one_per_node.push_back(8 * n);
  CollectiveRequest pat;
  pat.op = CollectiveOp::kAllGather;
  pat.bytes = kMiB;
  pat.ranks = 16;
  pat.algorithms = ParseNcclAlgo("pat").value();
  const CollectiveModel model(per_node);
  EXPECT_TRUE(model.Estimate(pat, model.LayoutOf(one_per_node)).ok());
  per_node.nccl_version = ParseNcclVersion("2.22").value();
  const CollectiveModel old(per_node);
  EXPECT_FALSE(old.Estimate(pat, old.LayoutOf(one_per_node)).ok());
  EXPECT_EQ(ParseNcclVersion("2.28.3").value(), 22803);
  EXPECT_FALSE(ParseNcclVersion("3.0").ok());
  EXPECT_FALSE(ParseNcclVersion("2").ok());
  EXPECT_FALSE(ParseNcclVersion("2.18.").ok());
  EXPECT_FALSE(ParseNcclVersion("2.18.1.1").ok());
}

TEST(CollectiveModelTest, SmallMessageLatencyGrowsWithScale) {
  double previous = 0;
  for (int nodes : {1, 2, 16, 128, 1024}) {
    const double t = Predict(DgxCluster("h100-sxm", nodes), CollectiveOp::kAllReduce, 8).time_us;
    EXPECT_GT(t, previous) << nodes;
    previous = t;
  }
}

TEST(CollectiveModelTest, FabricLatencyFromTheScenarioCounts) {
  Cluster fast = DgxCluster("h100-sxm", 16);
  Cluster slow = fast;
  slow.scale_out.leaf_switch.latency = 2e-6;
  const double t_fast = Predict(fast, CollectiveOp::kAllReduce, 8).time_us;
  const double t_slow = Predict(slow, CollectiveOp::kAllReduce, 8).time_us;
  EXPECT_GT(t_slow, t_fast + 1.8);  // at least one network hop each way costs 1.8 us more
  Cluster slow_nvlink = DgxCluster("h100-sxm", 1);
  slow_nvlink.scale_up.latency = 1.5e-6;
  EXPECT_NEAR(
      Predict(slow_nvlink, CollectiveOp::kAllReduce, 8, 0, "ring").time_us -
          Predict(DgxCluster("h100-sxm", 1), CollectiveOp::kAllReduce, 8, 0, "ring").time_us,
      14 * 1.0, 1e-6);  // 14 ring steps, 1 us slower each
}

TEST(CollectiveModelTest, LargeRingBandwidthIsTheSlowerFabric) {
  // 8 x 400G per node (384 GB/s of data) against 370.8 GB/s of NVLink: NVLink bounds the ring.
  const Cluster c = DgxCluster("h100-sxm", 16);
  EXPECT_NEAR(Predict(c, CollectiveOp::kAllReduce, 8 * kGiB, 0, "ring", "simple").busbw_gbps, 370,
              15);
  // With 2 NICs per node, the network bounds it: 2 x 48 GB/s.
  Cluster thin = c;
  thin.scale_out.nics_per_node = 2;
  EXPECT_NEAR(Predict(thin, CollectiveOp::kAllReduce, 8 * kGiB, 0, "ring", "simple").busbw_gbps, 96,
              4);
}

TEST(CollectiveModelTest, AllToAllTendsToTheNicRate) {
  // shared/reference/collectives.md: one 400G NIC per GPU, busbw tends to the per-NIC rate.
  double previous = 1e9;
  for (int nodes : {2, 16, 128}) {
    const double busbw =
        Predict(DgxCluster("h100-sxm", nodes), CollectiveOp::kAllToAll, 8 * kGiB).busbw_gbps;
    EXPECT_LT(busbw, previous);
    previous = busbw;
  }
  EXPECT_NEAR(previous, 48, 48 * 0.05);
}

TEST(CollectiveModelTest, OversubscribedSpineSlowsCrossLeafAllToAll) {
  Cluster full = DgxCluster("h100-sxm", 128);
  full.scale_out.topology = ScaleOutTopology::kClos;
  full.scale_out.nodes_per_leaf = 4;
  Cluster half = full;
  half.scale_out.oversubscription = 2.0;
  const double t_full = Predict(full, CollectiveOp::kAllToAll, 8 * kGiB).time_us;
  const double t_half = Predict(half, CollectiveOp::kAllToAll, 8 * kGiB).time_us;
  EXPECT_NEAR(t_half / t_full, 2.0, 0.1);
}

TEST(CollectiveModelTest, InNetworkReductionEnablesCollNet) {
  Cluster c = DgxCluster("h100-sxm", 16);
  CollectiveRequest r{CollectiveOp::kAllReduce, kGiB, 128};
  EXPECT_FALSE(
      CollectiveModel(c).EstimateWith(r, Algorithm::kCollNetDirect, Protocol::kSimple).ok());
  c.scale_out.in_network_reduction = true;
  auto e = CollectiveModel(c).EstimateWith(r, Algorithm::kCollNetDirect, Protocol::kSimple);
  ASSERT_TRUE(e.ok());
  // SHARP halves the network traffic of a tree: more bus bandwidth than a ring.
  EXPECT_GT(e->busbw_gbps, Predict(c, CollectiveOp::kAllReduce, kGiB, 0, "ring").busbw_gbps);
}

TEST(CollectiveModelTest, PatRunsWithOneRankPerNode) {
  Cluster c = DgxCluster("h100-sxm", 64);
  c.gpus_per_node = 1;
  c.scale_up.domain_size = 1;
  c.scale_out.nics_per_node = 1;
  const auto e = Predict(c, CollectiveOp::kAllGather, 64 * kKiB, 0, "pat");
  EXPECT_EQ(e.algorithm, Algorithm::kPat);
  const auto ring = Predict(c, CollectiveOp::kAllGather, 64 * kKiB, 0, "ring");
  EXPECT_LT(e.time_us, ring.time_us);  // log2(n) steps instead of n-1
}

TEST(CollectiveModelTest, GroupsThatFitNoAlgorithmAreErrors) {
  const Cluster c = DgxCluster("h100-sxm", 1);
  CollectiveRequest r{CollectiveOp::kAllReduce, kMiB, 16};
  auto e = CollectiveModel(c).Estimate(r);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "communicator of 16 ranks does not fit a cluster of 8 GPUs");
  r.ranks = 8;
  r.algorithms = ParseNcclAlgo("tree").value();
  e = CollectiveModel(c).Estimate(r);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(),
            "no allowed algorithm/protocol runs allreduce on 8 ranks (check NCCL_ALGO / "
            "NCCL_PROTO)");
}

TEST(CollectiveModelTest, SendRecvAcrossNodesUsesOneNic) {
  const auto e = Predict(DgxCluster("h100-sxm", 2), CollectiveOp::kSendRecv, 8 * kGiB);
  EXPECT_NEAR(e.busbw_gbps, 48, 1);
  const auto intra = Predict(DgxCluster("h100-sxm", 1), CollectiveOp::kSendRecv, 8 * kGiB);
  EXPECT_NEAR(intra.busbw_gbps, 370, 5);
}

TEST(CollectiveModelTest, ScalesToSixteenThousandRanks) {
  const Cluster c = DgxCluster("h100-sxm", 2048);
  for (int i = 0; i < kNumCollectiveOps; ++i) {
    const auto e = Predict(c, static_cast<CollectiveOp>(i), kGiB);
    EXPECT_GT(e.time_us, 0);
    EXPECT_GT(e.busbw_gbps, 0);
  }
}

}  // namespace
}  // namespace myriad::netmodel

namespace myriad::netmodel {
namespace {

TEST(CommLayoutTest, ContiguousGroupsMatchLayout) {
  const CollectiveModel model(testing::DgxCluster("h100-sxm", 128));
  for (int ranks : {1, 4, 8, 16, 256, 1024}) {
    std::vector<int> gpus(static_cast<size_t>(ranks));
    for (int i = 0; i < ranks; ++i) gpus[static_cast<size_t>(i)] = i;
    const CommLayout a = model.Layout(ranks), b = model.LayoutOf(gpus);
    EXPECT_EQ(a.domains, b.domains) << ranks;
    EXPECT_EQ(a.ranks_per_domain, b.ranks_per_domain) << ranks;
    EXPECT_EQ(a.cross_leaf, b.cross_leaf) << ranks;
  }
}

TEST(CommLayoutTest, StridedDataParallelGroupHasOneRankPerDomain) {
  const CollectiveModel model(testing::DgxCluster("h100-sxm", 128));
  std::vector<int> dp;
  for (int node = 0; node < 16; ++node) dp.push_back(node * 8 + 3);
  const CommLayout layout = model.LayoutOf(dp);
  EXPECT_EQ(layout.domains, 16);
  EXPECT_EQ(layout.ranks_per_domain, 1);
  EXPECT_FALSE(layout.cross_leaf);  // 16 nodes fit one leaf of 32
  CollectiveRequest r{CollectiveOp::kAllReduce, 1 << 30, 16};
  auto strided = model.Estimate(r, layout);
  ASSERT_TRUE(strided.ok());
  // One NIC per rank instead of NVLink inside nodes: far slower than 16 ranks on 2 nodes.
  EXPECT_GT(strided->time_us, 3 * model.Estimate(r)->time_us);
}

}  // namespace
}  // namespace myriad::netmodel
