#include <gtest/gtest.h>

#include "myriad/netmodel/collective.h"

namespace myriad::netmodel {
namespace {

TEST(SelectionTest, NcclAlgoList) {
  auto set = ParseNcclAlgo("Ring,tree");
  ASSERT_TRUE(set.ok());
  EXPECT_TRUE(set->contains(Algorithm::kRing));
  EXPECT_TRUE(set->contains(Algorithm::kTree));
  EXPECT_FALSE(set->contains(Algorithm::kNvls));
}

TEST(SelectionTest, NcclAlgoExclusionAndCollNet) {
  auto set = ParseNcclAlgo("^NVLS,collnet");
  ASSERT_TRUE(set.ok());
  EXPECT_TRUE(set->contains(Algorithm::kRing));
  EXPECT_TRUE(set->contains(Algorithm::kNvlsTree));
  EXPECT_FALSE(set->contains(Algorithm::kNvls));
  EXPECT_FALSE(set->contains(Algorithm::kCollNetDirect));
  EXPECT_FALSE(set->contains(Algorithm::kCollNetChain));
}

TEST(SelectionTest, NcclProto) {
  auto set = ParseNcclProto("LL128, simple");
  ASSERT_TRUE(set.ok());
  EXPECT_FALSE(set->contains(Protocol::kLL));
  EXPECT_TRUE(set->contains(Protocol::kLL128));
  EXPECT_TRUE(set->contains(Protocol::kSimple));
  EXPECT_TRUE(ParseNcclProto("^LL")->contains(Protocol::kSimple));
}

TEST(SelectionTest, BadValuesAreNamed) {
  EXPECT_EQ(ParseNcclAlgo("ring,hypercube").status().message(),
            "NCCL_ALGO: unknown value 'hypercube' in 'ring,hypercube'");
  EXPECT_EQ(ParseNcclProto("").status().message(), "NCCL_PROTO: unknown value '' in ''");
  EXPECT_EQ(ParseNcclProto("^ll,ll128,simple").status().message(),
            "NCCL_PROTO='^ll,ll128,simple' leaves nothing to choose from");
}

TEST(SelectionTest, CollectiveNames) {
  EXPECT_EQ(*ParseCollectiveOp("all_reduce"), CollectiveOp::kAllReduce);
  EXPECT_EQ(*ParseCollectiveOp("AllGather"), CollectiveOp::kAllGather);
  EXPECT_EQ(*ParseCollectiveOp("reduce-scatter"), CollectiveOp::kReduceScatter);
  EXPECT_EQ(*ParseCollectiveOp("alltoall"), CollectiveOp::kAllToAll);
  EXPECT_EQ(*ParseCollectiveOp("sendrecv"), CollectiveOp::kSendRecv);
  EXPECT_FALSE(ParseCollectiveOp("allsum").ok());
  for (int i = 0; i < kNumCollectiveOps; ++i) {
    const auto op = static_cast<CollectiveOp>(i);
    EXPECT_EQ(*ParseCollectiveOp(ToString(op)), op);
  }
}

TEST(SelectionTest, BusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOp::kAllReduce, 8), 14.0 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOp::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOp::kAllToAll, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOp::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOp::kSendRecv, 8), 1.0);
}

}  // namespace
}  // namespace myriad::netmodel
