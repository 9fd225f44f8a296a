// The engine with the flow-level network model: collectives of different communicators in
// flight together on the same NICs slow each other down, the report and the timeline say so,
// and with nothing shared the flow model times what the analytical one does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "myriad/emulator/engine.h"
#include "myriad/emulator/report.h"
#include "tests/netmodel/test_clusters.h"
#include "tests/support/vector_workload.h"

namespace myriad::emulator {
namespace {

using myriad::testing::VectorWorkload;
using netmodel::CollectiveOp;
using ::testing::HasSubstr;

constexpr std::uint64_t kFloats = 256ULL << 20;  // 1 GiB of fp32

// 2 nodes x 8 H100. Communicators "a" and "b" both join GPU 0 of each node (so NIC 0 of
// each); "c" joins GPU 1 of each (NIC 1). Ranks 0 and 8 all-reduce on "a" and "b" at once on
// two streams; ranks 1 and 9 all-reduce on "c".
VectorWorkload Contention() {
  VectorWorkload w(16);
  w.Comm("a", {0, 8});
  w.Comm("b", {0, 8});
  w.Comm("c", {1, 9});
  for (int r : {0, 8}) {
    w.StreamCreate(r, 1, true).StreamCreate(r, 2, true);
    w.Collective(r, 1, "a", CollectiveOp::kAllReduce, kFloats);
    w.Collective(r, 2, "b", CollectiveOp::kAllReduce, kFloats);
    w.Simple(r, OpKind::kDeviceSync);
  }
  for (int r : {1, 9}) {
    w.StreamCreate(r, 1, true);
    w.Collective(r, 1, "c", CollectiveOp::kAllReduce, kFloats);
    w.Simple(r, OpKind::kDeviceSync);
  }
  return w;
}

EngineOptions Options(netmodel::Fidelity fidelity) {
  EngineOptions o;
  o.fidelity = fidelity;
  o.timeline_max_ranks = 16;
  return o;
}

TEST(FlowEngineTest, CollectivesSharingANicSlowEachOtherDown) {
  const netmodel::Cluster cluster = netmodel::testing::DgxCluster("h100-sxm", 2);
  VectorWorkload analytical_run = Contention();
  auto analytical = RunEngine(analytical_run, cluster, Options(netmodel::Fidelity::kAnalytical));
  ASSERT_TRUE(analytical.ok()) << analytical.status().message();
  VectorWorkload flow_run = Contention();
  auto flow = RunEngine(flow_run, cluster, Options(netmodel::Fidelity::kFlow));
  ASSERT_TRUE(flow.ok()) << flow.status().message();
  // Analytically the three all-reduces take the same time; with flows, "a" and "b" share
  // NIC 0 of both nodes and take twice as long, "c" is alone on NIC 1.
  const SimTime alone = analytical->ranks[0].end_time;
  EXPECT_EQ(analytical->ranks[1].end_time, alone);
  EXPECT_NEAR(static_cast<double>(flow->ranks[0].end_time) / static_cast<double>(alone), 2.0, 0.1);
  EXPECT_NEAR(static_cast<double>(flow->ranks[1].end_time) / static_cast<double>(alone), 1.0, 0.01);
  // The report: per collective, the time alone and the mean with contention.
  ASSERT_EQ(flow->collectives.size(), 3u);
  for (const CollectiveStats& c : flow->collectives) {
    const double slowdown = static_cast<double>(c.flow_mean) / static_cast<double>(c.duration);
    EXPECT_NEAR(slowdown, c.comm == "c" ? 1.0 : 2.0, 0.1) << c.comm;
  }
  RunContext context{"replay", "test", "test.toml", "test workload", "flow", &cluster, {}, {}, {}};
  const std::string json = ReportJson(*flow, context);
  EXPECT_THAT(json, HasSubstr("\"model\": \"flow\""));
  EXPECT_THAT(json, HasSubstr("\"alone_us\": "));
  EXPECT_THAT(json, HasSubstr("\"slowdown\": 1.99"));
  EXPECT_THAT(FormatSummary(*flow, context), HasSubstr("slowdown"));
  // The timeline's collective slices carry the time alone and the slowdown.
  bool found = false;
  for (const TimelineSlice& s : flow->timeline)
    if (s.rank == 0 && s.category == "communication") {
      EXPECT_THAT(s.detail, HasSubstr("(flow; "));
      EXPECT_THAT(s.detail, HasSubstr(" alone, x2.00)"));
      found = true;
    }
  EXPECT_TRUE(found);
  // Deterministic.
  VectorWorkload again_run = Contention();
  auto again = RunEngine(again_run, cluster, Options(netmodel::Fidelity::kFlow));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(ReportJson(*again, context), json);
}

// A send/recv pair in flow mode takes what the analytical model says when nothing else runs.
TEST(FlowEngineTest, UncontendedSendTakesTheAnalyticalTime) {
  const netmodel::Cluster cluster = netmodel::testing::DgxCluster("h100-sxm", 2);
  auto build = [] {
    VectorWorkload w(16);
    w.Comm("p", {0, 8});
    w.P2p(0, OpKind::kSend, 0, "p", 1, kFloats);
    w.P2p(8, OpKind::kRecv, 0, "p", 0, kFloats);
    return w;
  };
  VectorWorkload a = build(), f = build();
  auto analytical = RunEngine(a, cluster, Options(netmodel::Fidelity::kAnalytical));
  auto flow = RunEngine(f, cluster, Options(netmodel::Fidelity::kFlow));
  ASSERT_TRUE(analytical.ok() && flow.ok()) << flow.status().message();
  EXPECT_NEAR(static_cast<double>(flow->total_time) / static_cast<double>(analytical->total_time),
              1.0, 1e-6);
}

}  // namespace
}  // namespace myriad::emulator
