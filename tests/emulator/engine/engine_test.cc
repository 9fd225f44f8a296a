// The engine on hand-written op streams. Each expected virtual time is worked out by hand in
// the comment above its assertion (launch latency L = 1 us unless a test says otherwise).
#include "myriad/emulator/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "myriad/emulator/report.h"
#include "myriad/netmodel/overlap.h"
#include "tests/netmodel/test_clusters.h"
#include "tests/support/vector_workload.h"

namespace myriad::emulator {
namespace {

using myriad::testing::VectorWorkload;
using netmodel::CollectiveOp;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr SimTime kUs = kPicosPerMicro;

EngineOptions TestOptions() {
  EngineOptions o;
  o.launch_latency = 1 * kUs;
  o.overlap = OverlapModel::kOff;
  return o;
}

netmodel::Cluster Dgx(int nodes = 1) { return netmodel::testing::DgxCluster("h100-sxm", nodes); }

// The model's time for a collective, rounded to picoseconds as the engine does.
SimTime ModelTime(const netmodel::Cluster& cluster, CollectiveOp op, std::uint64_t bytes,
                  int ranks) {
  netmodel::CollectiveModel model(cluster);
  return FromMicros(model.Estimate({op, bytes, ranks})->time_us);
}

RunResult RunOk(VectorWorkload& w, const EngineOptions& o = TestOptions(),
                const netmodel::Cluster& cluster = Dgx()) {
  auto result = RunEngine(w, cluster, o);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? std::move(result).value() : RunResult{};
}

Status RunError(VectorWorkload& w, const EngineOptions& o = TestOptions(),
                const netmodel::Cluster& cluster = Dgx()) {
  auto result = RunEngine(w, cluster, o);
  EXPECT_FALSE(result.ok());
  return result.ok() ? Status::Ok() : result.status();
}

TEST(EngineTest, KernelsOnOneStreamRunBackToBack) {
  VectorWorkload w(1);
  w.Kernel(0, 0, "a", 10).Kernel(0, 0, "b", 20);
  const RunResult r = RunOk(w);
  // a: [1, 11], b: [11, 31]; the program ends after its device work.
  EXPECT_EQ(r.total_time, 31 * kUs);
  EXPECT_EQ(r.ranks[0].compute, 30 * kUs);
  EXPECT_EQ(r.ranks[0].idle, 1 * kUs);
}

TEST(EngineTest, HostWorkDelaysTheLaunch) {
  VectorWorkload w(1);
  w.Kernel(0, 0, "a", 10).Host(0, 50).Kernel(0, 0, "b", 5);
  // a: [1, 11]; the host enqueues b at 50, so b: [51, 56].
  EXPECT_EQ(RunOk(w).total_time, 56 * kUs);
}

TEST(EngineTest, TwoStreamsOverlapComputeWithACollective) {
  // Both ranks: a 2-rank AllReduce on stream 2 and 100 us + 50 us of compute on stream 1,
  // all enqueued at host time 0.
  VectorWorkload w(2);
  w.Comm("world", {0, 1});
  const std::uint64_t count = 8 << 20;  // 32 MiB of float
  for (int r = 0; r < 2; ++r) {
    w.StreamCreate(r, 1, true).StreamCreate(r, 2, true);
    w.Collective(r, 2, "world", CollectiveOp::kAllReduce, count);
    w.Kernel(r, 1, "gemm", 100).Kernel(r, 1, "gemm", 50);
  }
  const netmodel::Cluster cluster = Dgx();
  const SimTime d = ModelTime(cluster, CollectiveOp::kAllReduce, count * 4, 2);
  ASSERT_LT(d, 150 * kUs);  // the collective hides under the compute
  const RunResult r = RunOk(w, TestOptions(), cluster);
  // Compute [1, 151]; the collective [1, 1 + d] overlaps it: nothing exposed.
  EXPECT_EQ(r.total_time, 151 * kUs);
  EXPECT_EQ(r.ranks[0].compute, 150 * kUs);
  EXPECT_EQ(r.ranks[0].exposed_comm, 0);
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_EQ(r.collectives[0].calls, 1u);  // one communicator-wide call
  EXPECT_EQ(r.collectives[0].duration, d);

  // With a 50% slowdown while the collective runs, the first kernel does d / 1.5 of its work
  // during [1, 1 + d], the rest (100 - d/1.5) after; the second kernel runs at full speed.
  EngineOptions slowed = TestOptions();
  slowed.overlap = OverlapModel::kFlat;
  slowed.overlap_slowdown = 0.5;
  VectorWorkload w2 = w;
  const RunResult s = RunOk(w2, slowed, cluster);
  const SimTime first_end = 1 * kUs + d + (100 * kUs - static_cast<SimTime>(std::llround(d / 1.5)));
  EXPECT_NEAR(static_cast<double>(s.total_time), static_cast<double>(first_end + 50 * kUs), 2.0);
}

// Both ranks: a 2-rank AllReduce on stream 2 beside a 1,000 us kernel on stream 1, a GEMM or
// a memory-bound kernel, under the shared model.
SimTime KernelBesideAllReduce(bool gemm, OverlapModel model, RunResult* out = nullptr) {
  VectorWorkload w(2);
  w.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) {
    w.StreamCreate(r, 1, true).StreamCreate(r, 2, true);
    w.Collective(r, 2, "world", CollectiveOp::kAllReduce, 8 << 20);
    if (gemm)
      w.Gemm(r, 1, "gemm", 1000, 8192, 8192, 8192);
    else
      w.Kernel(r, 1, "copy", 1000);
  }
  EngineOptions o = TestOptions();
  o.overlap = model;
  const RunResult result = RunOk(w, o, Dgx());
  if (out != nullptr) *out = result;
  return result.total_time;
}

TEST(EngineTest, AGemmBesideAnAllReduceLosesTheSmsOfItsChannels) {
  const netmodel::Cluster cluster = Dgx();
  const netmodel::CollectiveRequest request{CollectiveOp::kAllReduce, 32 << 20, 2};
  const auto est = netmodel::CollectiveModel(cluster).Estimate(request);
  ASSERT_TRUE(est.ok());
  const SimTime d = FromMicros(est->time_us);
  ASSERT_LT(d, 500 * kUs);
  // The kernel does d / stretch of its work while the AllReduce runs, the rest after it.
  auto expected = [&](double stretch) {
    return 1 * kUs + d + (1000 * kUs - static_cast<SimTime>(std::llround(d / stretch)));
  };
  const double sms = netmodel::TensorKernelStretch(cluster.gpu, est->channels);
  EXPECT_DOUBLE_EQ(sms, 132.0 / (132 - est->channels));
  RunResult r;
  EXPECT_NEAR(static_cast<double>(KernelBesideAllReduce(true, OverlapModel::kShared, &r)),
              static_cast<double>(expected(sms)), 4.0);
  // The report says what it added: (stretch - 1) x the work done beside the AllReduce.
  EXPECT_EQ(r.overlap.model, OverlapModel::kShared);
  EXPECT_EQ(r.overlap.slowed_kernels, 2u);
  EXPECT_NEAR(static_cast<double>(r.overlap.added), 2.0 * (d - d / sms), 8.0);

  const double rate = netmodel::HbmBytesPerRank(request) / (est->time_us * 1e-6);
  const double hbm = netmodel::MemoryKernelStretch(cluster, rate);
  EXPECT_GT(hbm, 1.0);
  EXPECT_NE(hbm, sms);
  EXPECT_NEAR(static_cast<double>(KernelBesideAllReduce(false, OverlapModel::kShared)),
              static_cast<double>(expected(hbm)), 4.0);

  // Off: the kernels run as if alone.
  EXPECT_EQ(KernelBesideAllReduce(true, OverlapModel::kOff, &r), 1001 * kUs);
  EXPECT_EQ(r.overlap.added, 0);
}

TEST(EngineTest, ExposedCommunicationIsCounted) {
  VectorWorkload w(2);
  w.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r)
    w.Kernel(r, 0, "k", 10).Collective(r, 0, "world", CollectiveOp::kAllReduce, 1 << 20);
  const SimTime d = ModelTime(Dgx(), CollectiveOp::kAllReduce, 4 << 20, 2);
  const RunResult r = RunOk(w);
  // k: [1, 11]; the AllReduce follows on the same stream: [11, 11 + d].
  EXPECT_EQ(r.total_time, 11 * kUs + d);
  EXPECT_EQ(r.ranks[1].compute, 10 * kUs);
  EXPECT_EQ(r.ranks[1].exposed_comm, d);
  EXPECT_EQ(r.ranks[1].idle, 1 * kUs);
}

TEST(EngineTest, LegacyDefaultStreamSynchronisesWithBlockingStreams) {
  VectorWorkload w(1);
  w.StreamCreate(0, 1);  // blocking
  w.Kernel(0, 1, "a", 100).Kernel(0, 0, "b", 10).Kernel(0, 1, "c", 10);
  // a: [1, 101]; b on the legacy stream waits for a: [101, 111]; c on the blocking stream
  // waits for b: [111, 121].
  EXPECT_EQ(RunOk(w).total_time, 121 * kUs);

  VectorWorkload nb(1);
  nb.StreamCreate(0, 1, /*non_blocking=*/true);
  nb.Kernel(0, 1, "a", 100).Kernel(0, 0, "b", 10).Kernel(0, 1, "c", 10);
  // A non-blocking stream does not: a: [1, 101], b: [1, 11], c: [101, 111].
  const RunResult r = RunOk(nb);
  EXPECT_EQ(r.total_time, 111 * kUs);
  EXPECT_EQ(r.ranks[0].compute, 110 * kUs);
}

TEST(EngineTest, PerThreadDefaultStreamDoesNotWaitForOtherStreams) {
  VectorWorkload w(1);
  w.StreamCreate(0, 1);
  w.Kernel(0, 1, "a", 100).Kernel(0, kPerThreadStream, "b", 10);
  // b runs beside a: the per-thread stream only synchronises with the legacy stream.
  const RunResult r = RunOk(w);
  EXPECT_EQ(r.total_time, 101 * kUs);
  EXPECT_EQ(r.ranks[0].compute, 100 * kUs);
}

TEST(EngineTest, CrossStreamEventWait) {
  VectorWorkload w(1);
  w.StreamCreate(0, 1, true).StreamCreate(0, 2, true);
  w.Kernel(0, 1, "a", 100);
  w.Simple(0, OpKind::kEventRecord, 1, /*event=*/7);
  w.Simple(0, OpKind::kStreamWaitEvent, 2, 7);
  w.Kernel(0, 2, "b", 10);
  w.Simple(0, OpKind::kEventSync, 0, 7);
  w.Host(0, 5);
  w.Kernel(0, 2, "c", 10);
  // a: [1, 101]; the event completes at 101; b waits for it: [101, 111]. The host waits for
  // the event until 101, works until 106, enqueues c (ready at 107) behind b: [111, 121].
  EXPECT_EQ(RunOk(w).total_time, 121 * kUs);
}

TEST(EngineTest, BlockingCopyAndStreamSyncBlockTheHost) {
  VectorWorkload w(1);
  Op copy;
  copy.kind = OpKind::kMemcpy;
  copy.copy_kind = MemcpyKind::kDeviceToHost;
  copy.bytes = 1000;
  copy.async = false;
  copy.duration = 20 * kUs;
  w.Kernel(0, 0, "a", 30).Add(0, copy).Host(0, 4).Kernel(0, 0, "b", 1);
  // a: [1, 31]; the copy [31, 51] blocks the host until 51; host work to 55; b: [56, 57].
  EXPECT_EQ(RunOk(w).total_time, 57 * kUs);
}

TEST(EngineTest, EventQueryLetsHostTimeMoveOn) {
  VectorWorkload w(1);
  w.StreamCreate(0, 1, true);
  w.Kernel(0, 1, "a", 100).Simple(0, OpKind::kEventRecord, 1, 1);
  w.Simple(0, OpKind::kEventQuery, 0, 1).Host(0, 10);
  // The query at 0 finds the kernel running and does not wait for the event: the host's clock
  // moves to the stream's next completion (a, at 101), as a polling loop would, then works
  // 10 us. With a second kernel queued, the event would still be pending then.
  EngineOptions o = TestOptions();
  o.timeline_max_ranks = 1;
  const RunResult r = RunOk(w, o);
  EXPECT_EQ(r.total_time, 111 * kUs);
  bool host_slice = false;
  for (const TimelineSlice& s : r.timeline)
    if (s.track == kHostTrack && s.category == "host") {
      EXPECT_EQ(s.start, 101 * kUs);
      EXPECT_EQ(s.duration, 10 * kUs);
      host_slice = true;
    }
  EXPECT_TRUE(host_slice);
}

TEST(EngineTest, TwoStagePipelineWithSendRecv) {
  VectorWorkload w(2);
  w.Comm("pp", {0, 1});
  const std::uint64_t count = 1 << 20;  // 4 MiB activations
  for (int mb = 0; mb < 4; ++mb) {
    w.Kernel(0, 0, "forward", 50).P2p(0, OpKind::kSend, 0, "pp", 1, count);
    w.P2p(1, OpKind::kRecv, 0, "pp", 0, count).Kernel(1, 0, "forward", 50);
  }
  const netmodel::Cluster cluster = Dgx();
  const SimTime p = ModelTime(cluster, CollectiveOp::kSendRecv, count * 4, 2);
  const RunResult r = RunOk(w, TestOptions(), cluster);
  // Transfer i ends at e_i: e_0 = 51 + p, e_i = e_{i-1} + 50 + p; rank 1 computes 50 us after
  // the last: 51 + p + 3 (50 + p) + 50 = 251 + 4p.
  EXPECT_EQ(r.ranks[0].end_time, 201 * kUs + 4 * p);
  EXPECT_EQ(r.ranks[1].end_time, 251 * kUs + 4 * p);
  EXPECT_EQ(r.total_time, 251 * kUs + 4 * p);
}

TEST(EngineTest, GroupedSendRecvRingDoesNotDeadlock) {
  // Each rank sends to the next and receives from the previous inside one NCCL group.
  VectorWorkload w(4);
  w.Comm("ring", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    w.Simple(r, OpKind::kGroupStart);
    w.P2p(r, OpKind::kSend, 0, "ring", (r + 1) % 4, 1024);
    w.P2p(r, OpKind::kRecv, 0, "ring", (r + 3) % 4, 1024);
    w.Simple(r, OpKind::kGroupEnd);
  }
  const SimTime p = ModelTime(Dgx(), CollectiveOp::kSendRecv, 4096, 2);
  EXPECT_EQ(RunOk(w).total_time, 1 * kUs + p);
}

// Rank folding: ranks 2 and 3 mirror ranks 0 and 1 and replay their ops as given, peers and
// all. On the world they share, a mirror's peer is its source's shifted by two, so the ring
// closes as the unfolded one does.
TEST(EngineTest, AMirrorsPeerIsItsSourcesShiftedByTheMirrorsDistance) {
  auto ring = [](bool folded) {
    VectorWorkload w(4);
    w.Comm("world", {0, 1, 2, 3});
    for (int r = 0; r < 4; ++r) {
      const int as = folded ? r % 2 : r;  // whose ops rank r replays
      if (folded && r >= 2) w.Mirror(r, as);
      w.Simple(r, OpKind::kGroupStart);
      w.P2p(r, OpKind::kSend, 0, "world", (as + 1) % 4, 1024);
      w.P2p(r, OpKind::kRecv, 0, "world", (as + 3) % 4, 1024);
      w.Simple(r, OpKind::kGroupEnd);
    }
    return w;
  };
  VectorWorkload unfolded = ring(false);
  VectorWorkload folded = ring(true);
  const RunResult a = RunOk(unfolded);
  const RunResult b = RunOk(folded);
  EXPECT_EQ(b.total_time, a.total_time);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(b.ranks[r].end_time, a.ranks[r].end_time) << r;
}

// A peer the shift cannot carry (rank 0 alone talks to rank 1 of a pair that holds no
// mirror's counterpart) is an error naming the mirror, not a wrong pairing.
TEST(EngineTest, AMirrorsPeerOutsideItsCommunicatorIsAnError) {
  VectorWorkload w(4);
  w.Comm("world", {0, 1, 2, 3});
  w.Comm("pair", {0, 1, 2});
  w.Mirror(2, 0).Mirror(3, 1);
  w.P2p(0, OpKind::kSend, 0, "pair", 1, 1024).P2p(1, OpKind::kRecv, 0, "pair", 0, 1024);
  w.P2p(2, OpKind::kSend, 0, "pair", 1, 1024);
  const Status st = RunError(w);
  EXPECT_THAT(st.message(), HasSubstr("rank 2 (a mirror of rank 0)"));
  EXPECT_THAT(st.message(), HasSubstr("would be rank 3, which is not in 'pair'"));
}

TEST(EngineTest, MismatchedCollectiveNamesBothCalls) {
  VectorWorkload w(2);
  w.Comm("dp", {0, 1});
  w.Collective(0, 0, "dp", CollectiveOp::kAllReduce, 1024);
  w.Collective(1, 0, "dp", CollectiveOp::kAllReduce, 2048);
  EXPECT_EQ(RunError(w).message(),
            "mismatched collective #0 on communicator 'dp': rank 0 called allreduce count=1024 "
            "dtype=float32 redop=sum on 'dp', rank 1 called allreduce count=2048 dtype=float32 "
            "redop=sum on 'dp'");
}

TEST(EngineTest, DeadlockReportsWhoWaitsForWhat) {
  // Both ranks receive first: each recv waits for a send the other never reaches.
  VectorWorkload w(2);
  w.Comm("pp", {0, 1});
  w.P2p(0, OpKind::kRecv, 0, "pp", 1, 16).P2p(0, OpKind::kSend, 0, "pp", 1, 16);
  w.P2p(1, OpKind::kRecv, 0, "pp", 0, 16).P2p(1, OpKind::kSend, 0, "pp", 0, 16);
  EXPECT_EQ(
      RunError(w).message(),
      "deadlock at 1.000 us: every rank waits and no event is pending\n"
      "  rank 0 (host at 0.000 us) waits in device_sync\n"
      "    stream 0: recv count=16 dtype=float32 from peer 1 on 'pp' (waiting for its peers)\n"
      "  rank 1 (host at 0.000 us) waits in device_sync\n"
      "    stream 0: recv count=16 dtype=float32 from peer 0 on 'pp' (waiting for its peers)\n"
      "  recv (#0) on 'pp': no matching send from communicator rank 0\n"
      "  recv (#0) on 'pp': no matching send from communicator rank 1");
}

TEST(EngineTest, MissingCollectiveMemberIsADeadlock) {
  VectorWorkload w(3);
  w.Comm("dp", {0, 1, 2});
  w.Collective(0, 0, "dp", CollectiveOp::kAllReduce, 8);
  w.Collective(1, 0, "dp", CollectiveOp::kAllReduce, 8);
  const std::string message = RunError(w).message();
  EXPECT_THAT(message, StartsWith("deadlock at 1.000 us"));
  EXPECT_THAT(message, HasSubstr("allreduce count=8 dtype=float32 redop=sum on 'dp' (#0): "
                                 "ranks 2 never called it"));
}

TEST(EngineTest, OutOfMemoryNamesRankAllocationAndPeak) {
  VectorWorkload w(2);
  w.Memory(1, OpKind::kMalloc, 60ull << 30).Memory(1, OpKind::kFree, 10ull << 30);
  w.Memory(1, OpKind::kMalloc, 40ull << 30);
  EXPECT_EQ(RunError(w).message(),
            "predicted out of memory on rank 1 at 0.000 us: malloc of 42949672960 bytes brings "
            "it to 96636764160 bytes, over the 85899345920 bytes of HBM of h100-sxm (peak "
            "96636764160 bytes)");
}

// A malloc whose sum with what is allocated passes 2^64 is out of memory, not a wrap-around to
// a small number (16 B, then 2^64 - 1 B, gave a peak of 16 B).
TEST(EngineTest, AnAllocationPast2To64IsOutOfMemory) {
  VectorWorkload w(1);
  w.Memory(0, OpKind::kMalloc, 16).Memory(0, OpKind::kMalloc, ~std::uint64_t{0});
  EXPECT_EQ(RunError(w).message(),
            "predicted out of memory on rank 0 at 0.000 us: malloc of 18446744073709551615 bytes "
            "brings it to more than 2^64 bytes, over the 85899345920 bytes of HBM of h100-sxm "
            "(peak 16 bytes)");
}

TEST(EngineTest, PeakMemoryIsReported) {
  VectorWorkload w(1);
  w.Memory(0, OpKind::kMalloc, 1000).Memory(0, OpKind::kMalloc, 500);
  w.Memory(0, OpKind::kFree, 1000).Memory(0, OpKind::kMalloc, 200);
  EXPECT_EQ(RunOk(w).ranks[0].peak_memory, 1500u);
}

TEST(EngineTest, BadOpsAreClearErrors) {
  VectorWorkload unknown_stream(1);
  unknown_stream.Kernel(0, 5, "k", 1);
  EXPECT_EQ(RunError(unknown_stream).message(), "rank 0: stream 5 is used before a stream_create");
  VectorWorkload not_member(2);
  not_member.Comm("solo", {0});
  not_member.Collective(1, 0, "solo", CollectiveOp::kAllReduce, 8);
  EXPECT_EQ(RunError(not_member).message(),
            "rank 1 calls allreduce count=8 dtype=float32 redop=sum on 'solo' but is not a "
            "member of 'solo'");
  VectorWorkload too_big(9);
  EXPECT_EQ(RunError(too_big).message(), "test workload has 9 ranks but the cluster has 8 GPUs");
  VectorWorkload over_free(1);
  over_free.Memory(0, OpKind::kFree, 1);
  EXPECT_EQ(RunError(over_free).message(),
            "rank 0: free of 1 bytes, but only 0 bytes are allocated");
}

TEST(EngineTest, AllReduceOn1024RanksTakesTheCollectiveModelsTime) {
  const netmodel::Cluster cluster = Dgx(128);
  VectorWorkload w(1024);
  std::vector<int> all(1024);
  for (int i = 0; i < 1024; ++i) all[static_cast<size_t>(i)] = i;
  w.Comm("world", all);
  const std::uint64_t count = 64 << 20;  // 256 MiB of float
  for (int r = 0; r < 1024; ++r) w.Collective(r, 0, "world", CollectiveOp::kAllReduce, count);
  const RunResult r = RunOk(w, TestOptions(), cluster);
  // Everyone arrives at 1 us; the call takes what `myriad collective` predicts for 256 MiB.
  EXPECT_EQ(r.total_time, 1 * kUs + ModelTime(cluster, CollectiveOp::kAllReduce, count * 4, 1024));
}

TEST(EngineTest, IterationTimeIsTheMeanBetweenMarkers) {
  VectorWorkload w(2);
  w.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) {
    w.Marker(r);
    for (int it = 0; it < 3; ++it) {
      w.Kernel(r, 0, "step", r == 0 ? 100 : 120);
      w.Simple(r, OpKind::kStreamSync).Marker(r);
    }
  }
  const RunResult r = RunOk(w);
  // Rank 1 is slower: its markers at 0, 121, 242, 363 are the latest; mean 121 us.
  ASSERT_EQ(r.iteration_ends.size(), 4u);
  EXPECT_EQ(r.iteration_time(), 121 * kUs);
}

// Programs name their steps ("Train step 3"): the marker option matches a prefix, or a glob.
TEST(EngineTest, IterationMarkersMatchAPrefixOrAPattern) {
  auto iterations = [](const std::string& pattern) {
    VectorWorkload w(1);
    for (int it = 0; it < 3; ++it)
      w.Marker(0, "Train step " + std::to_string(it)).Kernel(0, 0, "step", 100).Marker(0, "eval");
    w.Simple(0, OpKind::kStreamSync);
    EngineOptions o = TestOptions();
    o.iteration_label = pattern;
    return RunOk(w, o).iteration_ends.size();
  };
  EXPECT_EQ(iterations("Train step"), 3u);
  EXPECT_EQ(iterations("Train*[0-9]"), 0u);  // '*' only: no character classes
  EXPECT_EQ(iterations("*step 1"), 1u);
  EXPECT_EQ(iterations("eval"), 3u);
  EXPECT_EQ(iterations("iteration"), 0u);
}

TEST(EngineTest, SameInputsGiveByteIdenticalReports) {
  auto run = [] {
    VectorWorkload w(8);
    std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
    w.Comm("world", all);
    for (int r = 0; r < 8; ++r) {
      w.StreamCreate(r, 1, true);
      for (int it = 0; it < 3; ++it) {
        w.Kernel(r, 0, "fwd", 10 + r).Collective(r, 1, "world", CollectiveOp::kAllReduce, 1 << 18);
        w.Kernel(r, 0, "bwd", 20).Simple(r, OpKind::kDeviceSync).Marker(r);
      }
    }
    EngineOptions o = TestOptions();
    o.overlap = OverlapModel::kShared;
    o.timeline_max_ranks = 4;
    RunResult result = RunOk(w, o);
    RunContext context{"replay", "dgx", "dgx.toml", "test workload", "analytical", nullptr,
                       {},       {},    {}};
    return ReportJson(result, context) + TimelineJson(result, context) +
           FormatSummary(result, context);
  };
  const std::string first = run();
  EXPECT_EQ(first, run());
  EXPECT_THAT(first, HasSubstr("\"iteration_time_us\": "));
}

}  // namespace
}  // namespace myriad::emulator

// Calls only live processes make, and the live-source protocol (Pending, wakeup, Reply).
namespace myriad::emulator {
namespace {

Op Live(OpKind kind, int stream = 0, int event = 0, int event2 = 0) {
  Op op;
  op.kind = kind;
  op.stream = stream;
  op.event = event;
  op.event2 = event2;
  op.wants_reply = true;
  return op;
}

// A live source fed from another thread: ops arrive after a real delay, replies are kept.
class ThreadFedSource : public OpSource {
 public:
  ThreadFedSource(std::vector<Op> ops, std::vector<std::pair<OpKind, OpReply>>* replies)
      : replies_(replies), ops_(std::move(ops)) {}
  ~ThreadFedSource() override {
    if (feeder_.joinable()) feeder_.join();
  }
  bool Pending() override {
    std::lock_guard<std::mutex> lock(mu_);
    return next_ >= available_ && available_ < ops_.size();
  }
  void SetWakeup(std::function<void()> wakeup) override {
    {
      // Held while waking, as the real live source does: once cleared, no call is in flight.
      std::lock_guard<std::mutex> lock(wake_mu_);
      wakeup_ = std::move(wakeup);
    }
    if (!wakeup_ || feeder_.joinable()) return;
    // The "process" makes one op available every millisecond of real time.
    feeder_ = std::thread([this] {
      for (size_t i = 0; i < ops_.size(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        {
          std::lock_guard<std::mutex> lock(mu_);
          ++available_;
        }
        std::lock_guard<std::mutex> lock(wake_mu_);
        if (wakeup_) wakeup_();
      }
    });
  }
  Result<bool> Next(Op& op) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (next_ >= ops_.size()) return false;
    op = ops_[next_++];
    return true;
  }
  void Reply(const Op& op, const OpReply& reply) override { replies_->push_back({op.kind, reply}); }

 private:
  std::vector<std::pair<OpKind, OpReply>>* replies_;
  std::vector<Op> ops_;
  std::mutex mu_;
  size_t available_ = 0, next_ = 0;
  std::mutex wake_mu_;
  std::function<void()> wakeup_;
  std::thread feeder_;
};

class LiveWorkload : public Workload {
 public:
  explicit LiveWorkload(std::vector<std::vector<Op>> programs)
      : replies(programs.size()), programs_(std::move(programs)) {}
  int world_size() const override { return static_cast<int>(programs_.size()); }
  const std::vector<CommunicatorSpec>& communicators() const override { return comms_; }
  NameTable& names() override { return names_; }
  std::string description() const override { return "live test"; }
  Result<std::unique_ptr<OpSource>> OpenRank(int rank) override {
    return std::unique_ptr<OpSource>(std::make_unique<ThreadFedSource>(
        programs_[static_cast<size_t>(rank)], &replies[static_cast<size_t>(rank)]));
  }
  NameTable names_;
  // Per rank, what the engine answered (kept here: the sources die with the run).
  std::vector<std::vector<std::pair<OpKind, OpReply>>> replies;

 private:
  std::vector<std::vector<Op>> programs_;
  std::vector<CommunicatorSpec> comms_;
};

TEST(LiveEngineTest, QueriesElapsedTimeAndCommunicatorsCreatedAtRunTime) {
  // Each rank joins a communicator made at run time (communicator ranks reversed), times a
  // 100 us kernel between two events, all-reduces, polls its stream twice, asks for the
  // elapsed time, and synchronises. Ops arrive from another thread, one per millisecond.
  NameTable names;
  const NameId comm = names.Intern("nccl-1");
  const NameId k = names.Intern("k");
  std::vector<std::vector<Op>> programs(2);
  for (int r = 0; r < 2; ++r) {
    Op init = Live(OpKind::kCommInit);
    init.comm = comm;
    init.peer = 1 - r;
    init.count = 2;
    Op kernel;
    kernel.kind = OpKind::kKernel;
    kernel.name = k;
    kernel.duration = 100 * kUs;
    Op start;
    start.kind = OpKind::kEventRecord;
    start.event = 1;
    Op end = start;
    end.event = 2;
    Op ar;
    ar.kind = OpKind::kCollective;
    ar.comm = comm;
    ar.count = 1024;
    programs[static_cast<size_t>(r)] = {init,
                                        start,
                                        kernel,
                                        end,
                                        ar,
                                        Live(OpKind::kStreamQuery),
                                        Live(OpKind::kStreamQuery),
                                        Live(OpKind::kStreamQuery),
                                        Live(OpKind::kEventElapsed, 0, 1, 2),
                                        Live(OpKind::kDeviceSync)};
  }
  LiveWorkload w(programs);
  w.names_ = names;
  auto result = RunEngine(w, Dgx(), TestOptions());
  ASSERT_TRUE(result.ok()) << result.status().message();
  const SimTime d = ModelTime(Dgx(), CollectiveOp::kAllReduce, 4096, 2);
  for (const auto& replies : w.replies) {
    ASSERT_EQ(replies.size(), 6u);
    // comm init: a barrier at host time 0.
    EXPECT_EQ(replies[0].second.host_time, 0);
    // start record [1], kernel [1, 101], end record [101], AllReduce [101, 101 + d].
    // Poll 1 at 0: not done; the host moves to the next completion (the start record, 1).
    EXPECT_EQ(replies[1].second.value, 0);
    EXPECT_EQ(replies[1].second.host_time, 1 * kUs);
    // Poll 2 at 1: not done; next completion: the kernel at 101.
    EXPECT_EQ(replies[2].second.value, 0);
    EXPECT_EQ(replies[2].second.host_time, 101 * kUs);
    // Poll 3 at 101: the end record has completed, the AllReduce has not: to 101 + d.
    EXPECT_EQ(replies[3].second.value, 0);
    EXPECT_EQ(replies[3].second.host_time, 101 * kUs + d);
    // Elapsed: 100 us between the records.
    EXPECT_EQ(replies[4].second.value, 100 * kUs);
    EXPECT_EQ(replies[5].second.host_time, 101 * kUs + d);
  }
  EXPECT_EQ(result->total_time, 101 * kUs + d);
}

TEST(LiveEngineTest, CommunicatorSplitGroupsByColorAndOrdersByKey) {
  // ncclCommSplit of 4 ranks: color = rank % 2, key = -rank.
  NameTable names;
  const NameId parent = names.Intern("c");
  const NameId split = names.Intern("c/split0");
  const NameId child0 = names.Intern("c/split0/color0");
  std::vector<std::vector<Op>> programs(4);
  for (int r = 0; r < 4; ++r) {
    Op init = Live(OpKind::kCommInit);
    init.comm = parent;
    init.peer = r;
    init.count = 4;
    Op s = init;
    s.comm = split;
    s.root = r % 2;
    s.event = -r;
    programs[static_cast<size_t>(r)] = {init, s};
    if (r % 2 == 0) {
      Op ar;
      ar.kind = OpKind::kCollective;
      ar.comm = child0;
      ar.count = 1024;
      programs[static_cast<size_t>(r)].push_back(ar);
    }
  }
  LiveWorkload w(programs);
  w.names_ = names;
  auto result = RunEngine(w, Dgx(), TestOptions());
  ASSERT_TRUE(result.ok()) << result.status().message();
  auto child = [&](int rank) { return w.replies[static_cast<size_t>(rank)][1].second.value; };
  // Color 0: ranks 2 (key -2) then 0 (key 0); color 1: ranks 3 then 1. Size 2 each.
  EXPECT_EQ(child(2), (std::int64_t{0} << 32) | 2);
  EXPECT_EQ(child(0), (std::int64_t{1} << 32) | 2);
  EXPECT_EQ(child(3), (std::int64_t{0} << 32) | 2);
  EXPECT_EQ(child(1), (std::int64_t{1} << 32) | 2);
  ASSERT_EQ(result->collectives.size(), 1u);
  EXPECT_EQ(result->collectives[0].comm, "c/split0/color0");
}

TEST(LiveEngineTest, CommunicatorJoinsMustAgree) {
  NameTable names;
  const NameId comm = names.Intern("c");
  std::vector<std::vector<Op>> programs(2);
  for (int r = 0; r < 2; ++r) {
    Op init = Live(OpKind::kCommInit);
    init.comm = comm;
    init.peer = 0;  // both claim communicator rank 0
    init.count = 2;
    programs[static_cast<size_t>(r)] = {init};
  }
  LiveWorkload w(programs);
  w.names_ = names;
  auto result = RunEngine(w, Dgx(), TestOptions());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "rank 1: joins communicator 'c' as rank 0, which is taken");
}

}  // namespace
}  // namespace myriad::emulator
