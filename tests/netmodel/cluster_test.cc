#include "myriad/netmodel/cluster.h"

#include <gtest/gtest.h>

#include "tests/netmodel/test_clusters.h"

namespace myriad::netmodel {
namespace {

using testing::DgxCluster;

TEST(ClusterTest, DerivedFigures) {
  Cluster c = DgxCluster("h100-sxm", 128);
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().message();
  EXPECT_EQ(c.total_gpus(), 1024);
  EXPECT_EQ(c.scale_up_domains(), 128);
  EXPECT_NEAR(c.scale_up.data_bandwidth(), 370.8e9, 1e6);
  EXPECT_NEAR(c.scale_out_bandwidth_per_gpu(), 48e9, 1e6);  // 400 Gb/s at 96%
  EXPECT_NEAR(c.network_latency(false), 1.0e-6, 1e-12);
  EXPECT_NEAR(c.network_latency(true), 1.4e-6, 1e-12);
}

TEST(ClusterTest, SharedNicsDivideBandwidth) {
  Cluster c = DgxCluster("h100-sxm", 4);
  c.scale_out.nics_per_node = 4;
  EXPECT_NEAR(c.scale_out_bandwidth_per_gpu(), 24e9, 1e6);
}

TEST(ClusterTest, ValidationNamesTheField) {
  Cluster c = DgxCluster("h100-sxm", 2);
  c.scale_out.topology = ScaleOutTopology::kNone;
  EXPECT_EQ(c.Validate().message(),
            "cluster spans 2 scale-up domains but cluster.scale_out.topology = \"none\"");

  c = DgxCluster("a100-sxm-80gb", 1);
  c.scale_up.nvls = true;
  EXPECT_EQ(c.Validate().message(),
            "cluster.scale_up.nvls = true, but a100-sxm-80gb has no NVLink SHARP");

  c = DgxCluster("h100-sxm", 2);
  c.scale_out.oversubscription = 0.5;
  EXPECT_EQ(c.Validate().message(), "cluster.scale_out.oversubscription must be at least 1.0");

  c = DgxCluster("gb200", 18);
  c.gpus_per_node = 4;
  c.scale_up.kind = ScaleUpKind::kNvlDomain;
  c.scale_up.domain_size = 70;
  EXPECT_EQ(c.Validate().message(),
            "cluster.scale_up.domain_size (70) must be a multiple of cluster.gpus_per_node (4)");
  c.scale_up.domain_size = 72;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().message();
  EXPECT_EQ(c.scale_up_domains(), 1);
}

}  // namespace
}  // namespace myriad::netmodel
