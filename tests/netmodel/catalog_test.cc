#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "myriad/netmodel/hardware.h"

namespace myriad::netmodel {
namespace {

using ::testing::HasSubstr;

TEST(CatalogTest, EveryGpuHasCompleteFigures) {
  for (const std::string& key : GpuKeys()) {
    SCOPED_TRACE(key);
    auto gpu = FindGpu(key);
    ASSERT_TRUE(gpu.ok());
    EXPECT_EQ(gpu->key, key);
    EXPECT_GT(gpu->bf16_flops, 1e14);
    EXPECT_GT(gpu->fp32_flops, 1e13);
    EXPECT_GT(gpu->hbm_bytes, 32e9);  // the 40 GB A100 the smallest
    EXPECT_GT(gpu->hbm_bandwidth, 1e12);
    EXPECT_GT(gpu->sm_count, 100);
    EXPECT_GT(gpu->nvlink_links * gpu->nvlink_link_bandwidth, 2e11);
    EXPECT_GT(gpu->nvlink_efficiency, 0.5);
    EXPECT_LE(gpu->nvlink_efficiency, 1.0);
    EXPECT_GT(gpu->channel_bandwidth, 1e10);
    EXPECT_GT(PcieX16Bandwidth(gpu->pcie_generation), 0);
  }
}

TEST(CatalogTest, DatasheetFigures) {
  // shared/reference/hardware.md
  EXPECT_DOUBLE_EQ(FindGpu("a100-sxm-80gb")->bf16_flops, 312e12);
  EXPECT_DOUBLE_EQ(FindGpu("h100-sxm")->bf16_flops, 989.4e12);
  EXPECT_DOUBLE_EQ(FindGpu("h100-sxm")->fp8_flops, 1978.9e12);
  EXPECT_DOUBLE_EQ(FindGpu("h200-sxm")->hbm_bandwidth, 4.8e12);
  EXPECT_DOUBLE_EQ(FindGpu("b200")->bf16_flops, 2250e12);
  EXPECT_DOUBLE_EQ(FindGpu("gb200")->fp8_flops, 5000e12);
  // Per-direction NVLink: 300 / 450 / 900 GB/s.
  auto nvlink = [](const char* key) {
    auto g = FindGpu(key).value();
    return g.nvlink_links * g.nvlink_link_bandwidth;
  };
  EXPECT_DOUBLE_EQ(nvlink("a100-sxm-80gb"), 300e9);
  EXPECT_DOUBLE_EQ(nvlink("h100-sxm"), 450e9);
  EXPECT_DOUBLE_EQ(nvlink("b200"), 900e9);
  // NCCL's count of H100 NVLink: 18 x 20.6 GB/s.
  auto h100 = FindGpu("h100-sxm").value();
  EXPECT_NEAR(nvlink("h100-sxm") * h100.nvlink_efficiency, 370.8e9, 1e6);
  EXPECT_FALSE(FindGpu("a100-sxm-80gb")->nvlink_sharp);
  EXPECT_TRUE(h100.nvlink_sharp);
}

TEST(CatalogTest, Nics) {
  EXPECT_DOUBLE_EQ(FindNic("cx7-400g")->line_rate, 50e9);
  EXPECT_DOUBLE_EQ(FindNic("cx8-800g")->line_rate, 100e9);
  EXPECT_DOUBLE_EQ(FindNic("cx6-200g")->line_rate, 25e9);  // HDR 200 Gb/s
  EXPECT_EQ(FindNic("cx6-200g")->pcie_generation, 4);
  EXPECT_EQ(FindSwitch("quantum-hdr")->radix, 40);  // QM8700: 40 ports of HDR
  EXPECT_TRUE(FindSwitch("quantum-hdr")->in_network_reduction);
  for (const auto& key : NicKeys()) EXPECT_TRUE(FindNic(key).ok()) << key;
  for (const auto& key : SwitchKeys()) EXPECT_TRUE(FindSwitch(key).ok()) << key;
}

TEST(CatalogTest, UnknownKeysNameTheKnownOnes) {
  auto gpu = FindGpu("h1000");
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(
      gpu.status().message(),
      "unknown GPU 'h1000' (known: a100-sxm-80gb, a100-sxm-40gb, h100-sxm, h200-sxm, b200, gb200)");
  EXPECT_THAT(FindNic("cx9").status().message(), HasSubstr("unknown NIC 'cx9'"));
  EXPECT_THAT(FindSwitch("x").status().message(), HasSubstr("quantum-2"));
}

}  // namespace
}  // namespace myriad::netmodel
