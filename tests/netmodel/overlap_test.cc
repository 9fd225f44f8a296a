// Compute beside communication (netmodel/overlap.h): the SMs and HBM traffic NCCL's work takes
// from the kernels running beside it.
#include "myriad/netmodel/overlap.h"

#include <gtest/gtest.h>

#include "tests/netmodel/test_clusters.h"

namespace myriad::netmodel {
namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

TEST(OverlapTest, HbmBytesCountWhatARingMemberSendsReceivesAndReduces) {
  // 8 ranks: a ring member sends (and receives) 7/8 of the buffer per pass.
  const double pass = 7.0 / 8.0 * kGiB;
  EXPECT_DOUBLE_EQ(HbmBytesPerRank({CollectiveOp::kAllGather, kGiB, 8}), 2 * pass);
  EXPECT_DOUBLE_EQ(HbmBytesPerRank({CollectiveOp::kReduceScatter, kGiB, 8}), 3 * pass);
  EXPECT_DOUBLE_EQ(HbmBytesPerRank({CollectiveOp::kAllReduce, kGiB, 8}), 5 * pass);
  EXPECT_DOUBLE_EQ(HbmBytesPerRank({CollectiveOp::kBroadcast, kGiB, 8}), 2.0 * kGiB);
  EXPECT_DOUBLE_EQ(HbmBytesPerRank({CollectiveOp::kSendRecv, kGiB, 2}), 1.0 * kGiB);
  EXPECT_DOUBLE_EQ(HbmBytesPerRank({CollectiveOp::kAllReduce, kGiB, 1}), 2.0 * kGiB);
}

TEST(OverlapTest, TensorKernelsLoseTheSmsOfNcclsChannels) {
  const GpuSpec h100 = FindGpu("h100-sxm").value();
  ASSERT_EQ(h100.sm_count, 132);
  EXPECT_DOUBLE_EQ(TensorKernelStretch(h100, 0), 1.0);
  EXPECT_DOUBLE_EQ(TensorKernelStretch(h100, 32), 132.0 / 100.0);
  EXPECT_DOUBLE_EQ(TensorKernelStretch(h100, 2), 132.0 / 130.0);
  // More channels than SMs: compute keeps its floor share, and nothing divides by zero.
  EXPECT_DOUBLE_EQ(TensorKernelStretch(h100, 500), 1.0 / kComputeFloorShare);
}

TEST(OverlapTest, MemoryBoundKernelsStreamAtWhatTheTrafficLeaves) {
  const Cluster dgx = testing::DgxCluster("h100-sxm", 1);
  const double hbm = dgx.gpu.hbm_bandwidth * dgx.gpu.hbm_efficiency;
  EXPECT_DOUBLE_EQ(MemoryKernelStretch(dgx, 0), 1.0);
  EXPECT_DOUBLE_EQ(MemoryKernelStretch(dgx, 0.25 * hbm), 1.0 / 0.75);
  // Traffic beyond what the links can carry at once is bounded by them, then by the floor.
  const double links = 3 * dgx.scale_up.data_bandwidth();
  EXPECT_DOUBLE_EQ(MemoryKernelStretch(dgx, 10 * hbm), MemoryKernelStretch(dgx, links));
  EXPECT_LE(MemoryKernelStretch(dgx, 10 * hbm), 1.0 / kComputeFloorShare);
}

TEST(OverlapTest, ANodeWideAllGatherTakesMoreFromGemmsThanASendRecv) {
  const Cluster dgx = testing::DgxCluster("h100-sxm", 1);
  CollectiveModel model(dgx);
  const auto gather = model.Estimate({CollectiveOp::kAllGather, kGiB, 8});
  ASSERT_TRUE(gather.ok());
  // NCCL's ring on H100 runs 2 channels per NVLink up to MAXCHANNELS (32).
  EXPECT_EQ(gather->channels, 32);
  EXPECT_GT(TensorKernelStretch(dgx.gpu, gather->channels),
            TensorKernelStretch(dgx.gpu, kPointToPointChannels));
}

}  // namespace
}  // namespace myriad::netmodel
