// The parallelism of a synthetic workload beyond TP, PP and DP: context parallelism (ring
// attention), mixture-of-experts layers over expert-parallel ranks, interleaved 1F1B, FSDP and
// overlapped parameter gathers, uneven pipeline stages. Each test checks what the generator
// emits (communicators, calls and their sizes, FLOPs) or what the engine makes of it
// (matched pipelines, bubbles, peak memory against the plan, folding).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "myriad/emulator/engine.h"
#include "myriad/emulator/scenario.h"
#include "myriad/emulator/workload.h"
#include "tests/emulator/workload/workload_fixture.h"

namespace myriad::emulator {
namespace {

// The small GPT of the fixture with 4 experts of 1024 in 7 of its 8 layers (the first dense).
const std::string kSmallMoe =
    std::string(kSmallGpt) + "experts = 4\ntop_k = 2\nmoe_ffn = 1024\nmoe_first_dense = 1\n";
// 48 thin layers: room for many stages and virtual stages.
constexpr const char* kDeepGpt = "layers = 48\nhidden = 256\nheads = 4\nvocab = 1024\nseq = 512\n";

std::map<std::string, std::vector<int>> Communicators(Workload& w) {
  std::map<std::string, std::vector<int>> comms;
  for (const CommunicatorSpec& c : w.communicators()) comms[w.names().Name(c.name)] = c.ranks;
  return comms;
}

double TotalFlops(Workload& w, double* router = nullptr) {
  double flops = 0;
  for (int r = 0; r < w.world_size(); ++r) {
    const Tally t = Count(w, r);
    flops += t.flops;
    if (router) *router += t.router_flops;
  }
  return flops;
}

// The engine's peak on every simulated rank is the plan for its stage.
void ExpectPeakMemoryMatchesPlan(const Scenario& s) {
  auto w = MakeSyntheticWorkload(*s.workload, s.cluster, true);
  ASSERT_TRUE(w.ok()) << w.status().message();
  auto r = RunEngine(**w, s.cluster, EngineOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const int stages = s.workload->parallel.pp;
  const int per_stage = (*w)->world_size() / stages;
  for (const RankResult& rank : r->ranks) {
    const int stage = rank.rank / per_stage;  // pp is the slowest axis
    const double plan = s.workload->rank_memory(s.cluster.total_gpus(), stage).peak();
    EXPECT_NEAR(static_cast<double>(rank.peak_memory) / plan, 1.0, 1e-9)
        << "rank " << rank.rank << " stage " << stage;
  }
}

// Context parallelism: cp groups of the ranks holding one sequence's chunks, cp - 1 key/value
// exchanges per attention call, and the kernels of all ranks still add up to Megatron's count.
TEST(ContextParallelTest, RingAttentionGroupsExchangesAndFlops) {
  Scenario s = Load("cp.toml", 1, "tp = 2\ncp = 2\npp = 1", "global_batch = 4");
  auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
  ASSERT_TRUE(w.ok()) << w.status().message();
  const auto comms = Communicators(**w);
  // Megatron's order, TP fastest then CP: rank = tp + 2 (cp + 2 dp).
  EXPECT_EQ(comms.at("cp.t1.d0.p0"), (std::vector<int>{1, 3}));
  EXPECT_EQ(comms.at("tp.c1.d1.p0"), (std::vector<int>{6, 7}));
  // Dense gradients are reduced over dp x cp: every rank holding the same weights.
  EXPECT_EQ(comms.at("dp.t0.p0"), (std::vector<int>{0, 2, 4, 6}));
  const Tally t = Count(**w, 0);
  // 8 layers x 2 micro-batches x (forward + backward) x (cp - 1) exchanges; each carries K and
  // V of the rank's 512 tokens (4 KV heads of 64 per TP rank), the backward their gradients too.
  EXPECT_EQ(t.calls.at("cp send"), 8 * 2 * 2);
  EXPECT_EQ(t.calls.at("cp recv"), 8 * 2 * 2);
  EXPECT_DOUBLE_EQ(t.counts.at("cp send"), 8 * 2 * (2.0 * 512 * 4 * 64) * (1 + 2));
  EXPECT_NEAR(TotalFlops(**w) / s.workload->iteration_flops(), 1.0, 1e-9);

  Scenario s4 = Load("cp4.toml", 1, "tp = 2\ncp = 4\npp = 1", "global_batch = 2");
  auto w4 = MakeSyntheticWorkload(*s4.workload, s4.cluster, false);
  ASSERT_TRUE(w4.ok()) << w4.status().message();
  EXPECT_EQ(Count(**w4, 0).calls.at("cp send"), 8 * 2 * 2 * 3);  // dp 1: 2 micro-batches
  EXPECT_NEAR(TotalFlops(**w4) / s4.workload->iteration_flops(), 1.0, 1e-9);
  auto r = RunEngine(**w4, s4.cluster, EngineOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
}

TEST(ContextParallelTest, FoldingPredictsTheSameAndMemoryMatchesThePlan) {
  Scenario s = Load("cpfold.toml", 2, "tp = 2\ncp = 2\npp = 2", "global_batch = 8");
  auto full = MakeSyntheticWorkload(*s.workload, s.cluster, false);
  auto folded = MakeSyntheticWorkload(*s.workload, s.cluster, true);
  ASSERT_TRUE(full.ok() && folded.ok());
  EXPECT_EQ((*folded)->world_size(), 8);
  auto a = RunEngine(**full, s.cluster, EngineOptions{});
  auto b = RunEngine(**folded, s.cluster, EngineOptions{});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->iteration_time(), b->iteration_time());
  ExpectPeakMemoryMatchesPlan(s);
}

// An MoE layer adds a dispatch and a combine AllToAll on the EP communicator, each sending a
// rank's t x top_k routed token copies of h values (1/ep to each peer), forward and backward;
// dense layers add none. Expert gradients go to the expert-data-parallel group.
TEST(ExpertParallelTest, MoeLayersAddAllToAllOfTheExpectedSize) {
  Scenario s = Load("moe.toml", 1, "tp = 2\nep = 2\npp = 1\nsequence_parallel = true",
                    "global_batch = 8", kSmallMoe);
  ASSERT_EQ(s.workload->model.moe_layers(), 7);
  auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
  ASSERT_TRUE(w.ok()) << w.status().message();
  const auto comms = Communicators(**w);
  // rank = tp + 2 (ep + 2 edp): an EP group varies ep, an expert's replicas vary edp.
  EXPECT_EQ(comms.at("ep.t0.x1.p0"), (std::vector<int>{4, 6}));
  EXPECT_EQ(comms.at("edp.t0.e1.p0"), (std::vector<int>{2, 6}));
  EXPECT_EQ(comms.at("dp.t0.p0"), (std::vector<int>{0, 2, 4, 6}));
  const Tally t = Count(**w, 0);
  const int micro_batches = 2;  // 8 / dp 4
  EXPECT_EQ(t.calls.at("ep alltoall"), 7 * micro_batches * 4);
  const double per_peer = 1024.0 * 2 * 512 / 2;  // tokens x top_k x hidden / ep
  EXPECT_DOUBLE_EQ(t.counts.at("ep alltoall"), 7 * micro_batches * 4 * per_peer);
  EXPECT_GT(t.calls.at("edp allreduce"), 0);
  EXPECT_GT(t.calls.at("dp allreduce"), 0);
  double router = 0;
  EXPECT_NEAR(TotalFlops(**w, &router) / s.workload->iteration_flops(), 1.0, 1e-9);
  EXPECT_GT(router, 0);

  // A dense model of the same shape has no AllToAll.
  Scenario dense =
      Load("dense.toml", 1, "tp = 2\npp = 1\nsequence_parallel = true", "global_batch = 8");
  auto wd = MakeSyntheticWorkload(*dense.workload, dense.cluster, false);
  ASSERT_TRUE(wd.ok());
  EXPECT_EQ(Count(**wd, 0).calls.count("ep alltoall"), 0u);
}

TEST(ExpertParallelTest, FoldingPredictsTheSameAndMemoryMatchesThePlan) {
  Scenario s = Load("moefold.toml", 2, "tp = 2\nep = 4\npp = 2\ndistributed_optimizer = true",
                    "global_batch = 8", kSmallMoe);
  auto full = MakeSyntheticWorkload(*s.workload, s.cluster, false);
  auto folded = MakeSyntheticWorkload(*s.workload, s.cluster, true);
  ASSERT_TRUE(full.ok() && folded.ok()) << full.status().message();
  EXPECT_EQ((*full)->world_size(), 16);
  EXPECT_EQ((*folded)->world_size(), 16);  // dp 4 = ep 4: nothing to fold
  Scenario s2 = Load("moefold2.toml", 2, "tp = 2\nep = 2\npp = 2\ndistributed_optimizer = true",
                     "global_batch = 8", kSmallMoe);
  auto full2 = MakeSyntheticWorkload(*s2.workload, s2.cluster, false);
  auto folded2 = MakeSyntheticWorkload(*s2.workload, s2.cluster, true);
  ASSERT_TRUE(full2.ok() && folded2.ok());
  EXPECT_EQ((*folded2)->world_size(), 8);  // edp 2 folded to 1
  auto a = RunEngine(**full2, s2.cluster, EngineOptions{});
  auto b = RunEngine(**folded2, s2.cluster, EngineOptions{});
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(a->iteration_time(), b->iteration_time());
  ExpectPeakMemoryMatchesPlan(s2);
}

// Megatron's interleaved schedule matches every send with a receive (the engine would report
// a deadlock otherwise) for any stages, chunks and micro-batches it accepts; each micro-batch
// crosses the p v - 1 virtual-stage boundaries forward and back.
TEST(InterleavedPipelineTest, SchedulesMatchForManyShapes) {
  for (const auto& [p, v, m] : std::vector<std::tuple<int, int, int>>{
           {2, 2, 2}, {2, 4, 6}, {4, 2, 4}, {4, 2, 8}, {4, 3, 12}, {8, 2, 8}, {8, 3, 16}}) {
    SCOPED_TRACE(::testing::Message() << "p " << p << " v " << v << " m " << m);
    const int dp = 8 / p;
    Scenario s =
        Load("inter.toml", 1,
             "tp = 1\npp = " + std::to_string(p) + "\nvirtual_stages = " + std::to_string(v),
             "global_batch = " + std::to_string(m * dp), kDeepGpt);
    ASSERT_EQ(s.workload->micro_batches(), m);
    auto w = MakeSyntheticWorkload(*s.workload, s.cluster, true);
    ASSERT_TRUE(w.ok()) << w.status().message();
    int sends = 0, recvs = 0;
    for (int r = 0; r < (*w)->world_size(); ++r) {
      Tally t = Count(**w, r);
      sends += t.by_kind["send"];
      recvs += t.by_kind["recv"];
    }
    EXPECT_EQ(sends, 2 * m * (p * v - 1));
    EXPECT_EQ(recvs, sends);
    auto r = RunEngine(**w, s.cluster, EngineOptions{});
    ASSERT_TRUE(r.ok()) << r.status().message();
  }
}

// The bubble of a compute-bound pipeline shrinks to the textbook (p - 1) / (v m + p - 1) with
// v virtual stages; activation memory follows the interleaved warm-up.
TEST(InterleavedPipelineTest, BubbleFollowsTheTextbookFraction) {
  const int pp = 4, m = 8;
  auto bubble_of = [&](int v) {
    Scenario s = Load("ibubble" + std::to_string(v) + ".toml", 1,
                      "tp = 1\npp = 4\ndp = 2\nvirtual_stages = " + std::to_string(v),
                      "global_batch = 16\niterations = 2", kWideGpt);
    auto w = MakeSyntheticWorkload(*s.workload, s.cluster, true);
    EXPECT_TRUE(w.ok()) << w.status().message();
    auto r = RunEngine(**w, s.cluster, EngineOptions{});
    EXPECT_TRUE(r.ok()) << r.status().message();
    const RankResult& middle = r->ranks[1];  // stage 1 (one replica simulated)
    return 1 - static_cast<double>(middle.compute) / 2 / static_cast<double>(r->iteration_time());
  };
  const double plain = bubble_of(1), interleaved = bubble_of(2);
  EXPECT_NEAR(plain, (pp - 1.0) / (m + pp - 1.0), 0.05);
  EXPECT_NEAR(interleaved, (pp - 1.0) / (2 * m + pp - 1.0), 0.05);
  EXPECT_LT(interleaved, plain);

  Scenario s = Load("imem.toml", 1, "tp = 2\npp = 2\nvirtual_stages = 2",
                    "global_batch = 16\nrecompute = \"selective\"");
  // Stage 0 holds 2 (p - 1) + (v - 1) p + 1 = 5 chunks at the peak.
  EXPECT_EQ(s.workload->rank_memory(s.cluster.total_gpus(), 0).in_flight, 5);
  ExpectPeakMemoryMatchesPlan(s);
}

// Megatron's overlap_p2p_comm (on by default for interleaved schedules): each send and receive
// runs on its peer's stream and only the next compute of its direction waits for it. Pure
// scheduling (no SM contention) never makes a step slower, over several layouts; with the
// default contention a send/recv's 2 of 32 channels cost at most a trace.
TEST(InterleavedPipelineTest, OverlappedP2pNeverSlowsAStepAndHidesPipelineCommunication) {
  for (const auto& [layout, batch] :
       std::vector<std::pair<std::string, int>>{{"tp = 1\npp = 4\ndp = 2\nvirtual_stages = 2", 16},
                                                {"tp = 2\npp = 2\ndp = 2\nvirtual_stages = 4", 16},
                                                {"tp = 2\npp = 4\nvirtual_stages = 2", 32}}) {
    auto run = [&, layout = layout, batch = batch](bool overlap, bool shared) -> SimTime {
      Scenario s = Load("p2p.toml", 1, layout,
                        "global_batch = " + std::to_string(batch) +
                            "\noverlap_p2p_comm = " + (overlap ? "true" : "false"),
                        kWideGpt);
      auto w = MakeSyntheticWorkload(*s.workload, s.cluster, true);
      EXPECT_TRUE(w.ok()) << w.status().message();
      EngineOptions options;
      options.overlap = shared ? OverlapModel::kShared : OverlapModel::kOff;
      auto r = RunEngine(**w, s.cluster, options);
      EXPECT_TRUE(r.ok()) << r.status().message();
      return r.ok() ? r->iteration_time() : SimTime{0};
    };
    const SimTime overlapped = run(true, false), blocking = run(false, false);
    EXPECT_GT(blocking, 0);
    EXPECT_LE(overlapped, blocking) << layout;
    EXPECT_LE(static_cast<double>(run(true, true)), static_cast<double>(run(false, true)) * 1.001)
        << layout;
  }
}

struct ShardedRun {
  Tally rank0;
  SimTime iteration = 0;
  SimTime dp_exposed = 0;  // rank 0's, on dp.* communicators
};

// The wide GPT on one node with `parallel`, gathers overlapped or not; checks the memory plan.
ShardedRun RunSharded(const std::string& name, const std::string& parallel, bool overlap) {
  Scenario s =
      Load(name + (overlap ? "_overlap.toml" : ".toml"), 1, parallel,
           std::string("global_batch = 16\noverlap_param_gather = ") + (overlap ? "true" : "false"),
           kWideGpt);
  auto w = MakeSyntheticWorkload(*s.workload, s.cluster, true);
  EXPECT_TRUE(w.ok()) << w.status().message();
  ShardedRun run{Count(**w, 0)};
  auto r = RunEngine(**w, s.cluster, EngineOptions{});
  EXPECT_TRUE(r.ok()) << r.status().message();
  run.iteration = r->iteration_time();
  for (const auto& [comm, time] : r->ranks[0].exposed_by_comm)
    if (comm.rfind("dp.", 0) == 0) run.dp_exposed += time;
  ExpectPeakMemoryMatchesPlan(s);
  return run;
}

// FSDP gathers each unit's weights before its forward and its backward and reduce-scatters its
// gradients after every backward; nothing is all-reduced and the optimizer gathers nothing.
// Prefetching the gathers on their own stream hides most of them.
TEST(ShardingTest, FsdpGathersEveryUnitAndPrefetchHidesIt) {
  const ShardedRun plain = RunSharded("fsdp", "tp = 1\npp = 1\nfsdp = true", false);
  const int units = 1 + 8 + 1, m = 2;  // embedding, layers, output; 16 / dp 8
  EXPECT_EQ(plain.rank0.calls.at("dp allgather"), 2 * m * units);
  EXPECT_EQ(plain.rank0.calls.at("dp reducescatter"), m * units);
  EXPECT_EQ(plain.rank0.calls.count("dp allreduce"), 0u);
  const ShardedRun overlap = RunSharded("fsdp", "tp = 1\npp = 1\nfsdp = true", true);
  EXPECT_EQ(overlap.rank0.calls.at("dp allgather"), 2 * m * units);
  EXPECT_LT(overlap.iteration, plain.iteration);
  EXPECT_LT(overlap.dp_exposed, plain.dp_exposed);
}

// ZeRO-1 with overlap_param_gather: the updated weights are gathered unit by unit before the
// first forward that needs them, not after the optimizer step.
TEST(ShardingTest, DistributedOptimizerGathersBeforeTheFirstForward) {
  const std::string parallel = "tp = 2\npp = 2\ndistributed_optimizer = true";
  const ShardedRun plain = RunSharded("z1", parallel, false);
  const ShardedRun overlap = RunSharded("z1", parallel, true);
  EXPECT_EQ(plain.rank0.calls.at("dp allgather"), 1);
  EXPECT_EQ(overlap.rank0.calls.at("dp allgather"), 1 + 4);  // stage 0: the embedding, 4 layers
  EXPECT_LT(overlap.iteration, plain.iteration);
}

// Uneven stages hold the layers asked for; each stage's memory and the FLOPs follow.
TEST(UnevenPipelineTest, StagesHoldTheirLayers) {
  Scenario s =
      Load("uneven.toml", 1, "tp = 2\npp = 4\nfirst_stage_layers = 1\nlast_stage_layers = 1",
           "global_batch = 8", kWideGpt);
  EXPECT_EQ(s.workload->ChunkLayers(1, 0), (std::pair<int, int>{1, 4}));
  EXPECT_EQ(s.workload->ChunkLayers(3, 0), (std::pair<int, int>{7, 8}));
  auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_NEAR(TotalFlops(**w) / s.workload->iteration_flops(), 1.0, 1e-9);
  // The middle stages hold three layers and no embedding: the fullest.
  EXPECT_EQ(s.workload->fullest_stage(s.cluster.total_gpus()), 1);
  ExpectPeakMemoryMatchesPlan(s);
}

// Interleaved with uneven ends, as Llama 3 405B was trained (one layer fewer on the first and
// last stages): first_stage_layers and last_stage_layers are the first and last virtual
// stages' layers, the other virtual stages split the rest. 48 layers over 4 stages x 2 chunks:
// 3 + 6 x 7 + 3.
TEST(UnevenPipelineTest, InterleavedStagesTakeTheUnevenEndsOnTheirFirstAndLastChunks) {
  Scenario s = Load("uneven_interleaved.toml", 1,
                    "tp = 2\npp = 4\nvirtual_stages = 2\nfirst_stage_layers = 3\n"
                    "last_stage_layers = 3",
                    "global_batch = 16", kDeepGpt);
  EXPECT_EQ(s.workload->ChunkLayers(0, 0), (std::pair<int, int>{0, 3}));
  EXPECT_EQ(s.workload->ChunkLayers(1, 0), (std::pair<int, int>{3, 10}));
  EXPECT_EQ(s.workload->ChunkLayers(0, 1), (std::pair<int, int>{24, 31}));
  EXPECT_EQ(s.workload->ChunkLayers(3, 1), (std::pair<int, int>{45, 48}));
  EXPECT_EQ(s.workload->StageLayers(0), 3 + 7);
  EXPECT_EQ(s.workload->StageLayers(1), 7 + 7);
  EXPECT_EQ(s.workload->StageLayers(3), 7 + 3);
  auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_NEAR(TotalFlops(**w) / s.workload->iteration_flops(), 1.0, 1e-9);
  ExpectPeakMemoryMatchesPlan(s);
  // The rest must split evenly over the other virtual stages.
  WorkloadSpec bad = *s.workload;
  bad.parallel.first_stage_layers = 4;
  EXPECT_EQ(bad.Validate(8).message(),
            "layers (48) less parallel.first_stage_layers (4) and last_stage_layers (3) "
            "leaves 41 for the other 6 virtual stages, which must split it evenly (at least one "
            "each)");
}

}  // namespace
}  // namespace myriad::emulator
