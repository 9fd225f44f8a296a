// Rank folding's plan and the communicators a mirror joins (emulator/live/fold.cc), and a
// live rank's small-collective data standing in for its mirrors' (collective_data.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "collective_data.h"
#include "myriad/emulator/live.h"

namespace myriad::emulator {
namespace {

using ::testing::HasSubstr;

TEST(FoldTest, TheDefaultMeshMakesEveryRankAReplica) {
  auto plan = PlanFold("", {"dp"}, 16);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->live, 1);
  EXPECT_EQ(plan->replicas, 16);
  EXPECT_EQ(plan->mesh, "dp=16");
  EXPECT_TRUE(plan->folded());
  EXPECT_EQ(plan->source_of(13), 0);
  EXPECT_EQ(plan->replica_of(13), 13);
  auto unfolded = PlanFold("tp=4,dp=4", {}, 16);
  ASSERT_TRUE(unfolded.ok());
  EXPECT_FALSE(unfolded->folded());
}

TEST(FoldTest, AMeshPutsTheLiveRanksFirst) {
  auto plan = PlanFold("tp=8,pp=4,dp=4", {"dp"}, 128);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->live, 32);
  EXPECT_EQ(plan->replicas, 4);
  EXPECT_EQ(plan->source_of(77), 13);
  EXPECT_EQ(plan->replica_of(77), 2);
}

TEST(FoldTest, BadMeshesAreRefusedNamingWhy) {
  const auto error = [](const std::string& mesh, std::vector<std::string> fold, int world) {
    auto plan = PlanFold(mesh, fold, world);
    return plan.ok() ? std::string("accepted") : plan.status().message();
  };
  EXPECT_EQ(error("tp=3,dp=4", {"dp"}, 16), "mesh 'tp=3,dp=4' has 12 ranks, the world has 16");
  EXPECT_THAT(error("tp=4,pp=4", {"dp"}, 16), HasSubstr("has no dp axis"));
  EXPECT_THAT(error("tp=4,tp=4", {"dp"}, 16), HasSubstr("axis 'tp' appears twice"));
  EXPECT_THAT(error("zz=16", {"dp"}, 16), HasSubstr("unknown axis 'zz'"));
  EXPECT_THAT(error("tp=x,dp=4", {"dp"}, 16), HasSubstr("'tp=x' is not AXIS=SIZE"));
  EXPECT_THAT(error("pp=4,dp=4", {"pp", "dp"}, 16), HasSubstr("cannot mirror each other"));
  EXPECT_THAT(error("tp=4,dp=4", {"cp"}, 16), HasSubstr("--fold cp: mesh 'tp=4,dp=4' has no cp"));
  // Five axes of two billion ranks each: their product used to overflow.
  EXPECT_EQ(error("tp=2147483647,pp=2147483647,cp=2147483647,ep=2147483647,dp=2147483647", {"dp"},
                  2147483647),
            "mesh 'tp=2147483647,pp=2147483647,cp=2147483647,ep=2147483647,dp=2147483647' has "
            "more ranks than the world's 2147483647");
}

TEST(FoldTest, MirrorsJoinTheWorldDataParallelGroupsOrTheirReplicasCopy) {
  auto plan = PlanFold("tp=4,dp=4", {"dp"}, 16);
  ASSERT_TRUE(plan.ok());
  // The world: rank 2's mirror in replica 3 is world rank 14.
  auto world = InferMirrorMembership(*plan, "w", 16, 2, 3);
  ASSERT_TRUE(world.ok());
  EXPECT_FALSE(world->own_copy);
  EXPECT_EQ(world->rank, 14);
  // A data-parallel group has one live member, rank 0: the mirror's rank is its replica. (A
  // group of 4 here could also be a tensor-parallel one: ambiguous, so refused.)
  auto plan8 = PlanFold("tp=2,dp=4", {"dp"}, 8);
  ASSERT_TRUE(plan8.ok());
  auto across = InferMirrorMembership(*plan8, "dp0", 4, 0, 3);
  ASSERT_TRUE(across.ok());
  EXPECT_FALSE(across->own_copy);
  EXPECT_EQ(across->rank, 3);
  EXPECT_THAT(InferMirrorMembership(*plan8, "dp0", 4, 1, 1).status().message(),
              HasSubstr("must be rank 0"));
  auto ambiguous = InferMirrorMembership(*plan, "g", 4, 0, 1);
  EXPECT_THAT(ambiguous.status().message(), HasSubstr("could be 4 live rank(s) x none of the "
                                                      "folded axes; 1 live rank(s) x dp"));
  // Its rank 1 cannot be a data-parallel group's live member: a group inside the replica.
  auto inside4 = InferMirrorMembership(*plan, "g", 4, 1, 1);
  ASSERT_TRUE(inside4.ok()) << inside4.status().message();
  EXPECT_TRUE(inside4->inside_replica);
  // Inside a replica: the mirror's replica has a copy of its own.
  auto inside = InferMirrorMembership(*plan8, "tp", 2, 1, 1);
  ASSERT_TRUE(inside.ok());
  EXPECT_TRUE(inside->own_copy);
  EXPECT_EQ(inside->rank, 1);
  EXPECT_THAT(InferMirrorMembership(*plan8, "odd", 6, 0, 1).status().message(),
              HasSubstr("cannot infer its other members"));
}

// Folding tensor parallelism too: FSDP 4 x TP 2 from one live rank. A group along tp is the
// live rank's for mirrors at dp 0 and a copy for the others; one along dp likewise; the
// world holds everyone.
TEST(FoldTest, TensorParallelPeersMirrorTheirLiveRank) {
  auto plan = PlanFold("tp=2,dp=4", {"tp", "dp"}, 8);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->live, 1);
  EXPECT_EQ(plan->replicas, 8);
  EXPECT_EQ(plan->folded_names(), "tp,dp");
  // Replica 5 is rank 5: tp 1, dp 2. Its tp group is {4, 5}, a copy first at replica 4.
  const std::vector<int> tp_group = {0, 1}, dp_group = {0, 2, 4, 6};
  auto tp = InferMirrorMembership(*plan, "tp", 2, 0, 5, &tp_group);
  ASSERT_TRUE(tp.ok()) << tp.status().message();
  EXPECT_TRUE(tp->own_copy);
  EXPECT_EQ(tp->copy, 4);
  EXPECT_EQ(tp->rank, 1);
  auto dp = InferMirrorMembership(*plan, "dp", 4, 0, 5, &dp_group);
  ASSERT_TRUE(dp.ok()) << dp.status().message();
  EXPECT_EQ(dp->copy, 1);  // {1, 3, 5, 7}
  EXPECT_EQ(dp->rank, 2);
  auto own_tp = InferMirrorMembership(*plan, "tp", 2, 0, 1, &tp_group);
  ASSERT_TRUE(own_tp.ok());
  EXPECT_FALSE(own_tp->own_copy);  // rank 1 is in rank 0's tp group
  EXPECT_EQ(own_tp->rank, 1);
  auto world = InferMirrorMembership(*plan, "w", 8, 0, 5);
  ASSERT_TRUE(world.ok());
  EXPECT_FALSE(world->own_copy);
  EXPECT_EQ(world->rank, 5);
  // By size alone a group of 2 can only lie along tp, one of 4 only along dp here.
  auto tp_by_size = InferMirrorMembership(*plan, "tp", 2, 0, 5);
  ASSERT_TRUE(tp_by_size.ok());
  EXPECT_EQ(tp_by_size->copy, 4);
  EXPECT_EQ(tp_by_size->rank, 1);
  // TP 2 x DP 2: a group of 2 could be either, unless its members are named.
  auto square = PlanFold("tp=2,dp=2", {"tp", "dp"}, 4);
  ASSERT_TRUE(square.ok());
  EXPECT_THAT(InferMirrorMembership(*square, "g", 2, 0, 3).status().message(),
              HasSubstr("1 live rank(s) x tp; 1 live rank(s) x dp"));
  const std::vector<int> dp_pair = {0, 2};
  auto named = InferMirrorMembership(*square, "g", 2, 0, 3, &dp_pair);
  ASSERT_TRUE(named.ok()) << named.status().message();
  EXPECT_EQ(named->copy, 1);  // {1, 3}
  EXPECT_EQ(named->rank, 1);
  // A member list that is no whole group along the folded axes, or lacks the mirror's place.
  const std::vector<int> ragged = {0, 1, 2};
  EXPECT_THAT(InferMirrorMembership(*plan, "r", 3, 0, 5, &ragged).status().message(),
              HasSubstr("not whole groups along the folded axes"));
  const std::vector<int> skewed = {0, 3};
  EXPECT_THAT(InferMirrorMembership(*plan, "s", 2, 0, 5, &skewed).status().message(),
              HasSubstr("not whole groups"));
}

// torchtitan's 405B layout, reduced: its pipeline axis is the slowest, so folding tp and dp
// leaves live ranks 0 and 8 (one per stage). Each mirror's source is the live rank of its
// stage; a pipeline group (members named) lies inside the replica; the world places every
// mirror at its own rank; a smaller group known only by its size cannot be placed.
TEST(FoldTest, ALivePipelineAxisSlowerThanTheFoldedOnesSpreadsTheLiveRanks) {
  auto plan = PlanFold("tp=2,dp=4,pp=2", {"tp", "dp"}, 16);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->live, 2);
  EXPECT_EQ(plan->replicas, 8);
  EXPECT_FALSE(plan->contiguous());
  EXPECT_EQ(plan->live_rank(0), 0);
  EXPECT_EQ(plan->live_rank(1), 8);
  EXPECT_EQ(plan->live_ranks_text(), "0,8");
  EXPECT_TRUE(plan->is_live(8));
  EXPECT_FALSE(plan->is_live(1));
  // Rank 13: tp 1, dp 2, pp 1: it mirrors rank 8 as replica 1 + 2 x 2 = 5.
  EXPECT_EQ(plan->source_of(13), 8);
  EXPECT_EQ(plan->replica_of(13), 5);
  EXPECT_EQ(plan->rank_of(8, 5), 13);
  const std::vector<int> pp_group = {0, 8};
  auto pp = InferMirrorMembership(*plan, "pp", 2, 1, 5, &pp_group);
  ASSERT_TRUE(pp.ok()) << pp.status().message();
  EXPECT_TRUE(pp->inside_replica);
  EXPECT_EQ(pp->copy, 5);  // {5, 13}: replica 5's own copy
  EXPECT_EQ(pp->rank, 1);
  const std::vector<int> tp_group = {8, 9};
  auto tp = InferMirrorMembership(*plan, "tp", 2, 0, 5, &tp_group);
  ASSERT_TRUE(tp.ok()) << tp.status().message();
  EXPECT_EQ(tp->copy, 4);  // {12, 13}
  EXPECT_EQ(tp->rank, 1);
  auto world = InferMirrorMembership(*plan, "world", 16, 8, 5);
  ASSERT_TRUE(world.ok()) << world.status().message();
  EXPECT_FALSE(world->own_copy);
  EXPECT_EQ(world->rank, 13);
  EXPECT_THAT(InferMirrorMembership(*plan, "world", 16, 3, 5).status().message(),
              HasSubstr("the live ranks are 0,8"));
  EXPECT_THAT(InferMirrorMembership(*plan, "tp", 2, 0, 5).status().message(),
              HasSubstr("placed only from its members"));
  auto wide = PlanFold("dp=8,pp=8", {"dp"}, 64);
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->live_ranks_text(), "0,8,16,...,56");
}

TEST(FoldTest, ALiveRanksDataStandsForItsMirrors) {
  auto plan = PlanFold("", {"dp"}, 4);
  ASSERT_TRUE(plan.ok());
  CollectiveData data;
  data.SetFold(*plan);
  wire::DataHeader h;
  h.coll = 0;   // all-reduce
  h.dtype = 2;  // int32
  h.redop = 0;  // sum
  h.rank = 0;
  h.nranks = 4;
  h.count = 1;
  const std::int32_t mine = 5;
  auto answers = data.Add(h, "w", std::string(reinterpret_cast<const char*>(&mine), 4),
                          std::make_shared<int>(0));
  ASSERT_TRUE(answers.ok()) << answers.status().message();
  ASSERT_EQ(answers->size(), 4u);  // complete at once: the three mirrors sent the same
  std::int32_t sum = 0;
  std::memcpy(&sum, (*answers)[0].bytes.data(), 4);
  EXPECT_EQ(sum, 20);
  EXPECT_TRUE((*answers)[0].to);
  for (int r = 1; r < 4; ++r) EXPECT_FALSE((*answers)[static_cast<size_t>(r)].to);
}

}  // namespace
}  // namespace myriad::emulator
