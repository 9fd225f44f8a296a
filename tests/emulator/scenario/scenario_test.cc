// LoadScenario on scenarios written by each test: defaults, overrides, derivations, includes,
// provenance, and errors whose position or wording the malformed/ files do not pin down.
#include "myriad/emulator/scenario.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "scenario/toml_reader.h"

namespace myriad::emulator {
namespace {

namespace fs = std::filesystem;
using netmodel::ScaleOutTopology;
using netmodel::ScaleUpKind;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr double kGB = 1e9;
constexpr double kGiB = 1024.0 * 1024 * 1024;

constexpr const char* kH100Node = R"(
[cluster]
gpu = "h100-sxm"
nodes = 1
gpus_per_node = 8
)";

std::string H100Cluster(int nodes, const std::string& scale_out) {
  return "[cluster]\ngpu = \"h100-sxm\"\nnodes = " + std::to_string(nodes) +
         "\ngpus_per_node = 8\n\n[cluster.scale_out]\n" + scale_out;
}

class ScenarioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("myriad_scenario_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `text` to `name` under the test's directory; returns the path.
  std::string Write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }

  Scenario Load(const std::string& name, const std::string& text) {
    Result<Scenario> scenario = LoadScenario(Write(name, text));
    EXPECT_TRUE(scenario.ok()) << scenario.status().message();
    return scenario.ok() ? *scenario : Scenario{};
  }

  std::string Error(const std::string& name, const std::string& text) {
    Result<Scenario> scenario = LoadScenario(Write(name, text));
    EXPECT_FALSE(scenario.ok());
    return scenario.ok() ? "" : scenario.status().message();
  }

  std::string At(const std::string& name, int line, int column) {
    return (dir_ / name).string() + ":" + std::to_string(line) + ":" + std::to_string(column);
  }

  fs::path dir_;
};

TEST_F(ScenarioTest, OneH100NodeTakesCatalogFiguresAndDefaults) {
  const Scenario s = Load("node.toml", kH100Node);
  EXPECT_EQ(s.name, "node");  // the file's stem
  EXPECT_EQ(s.description, "");
  const netmodel::Cluster& c = s.cluster;
  EXPECT_EQ(c.gpu.key, "h100-sxm");
  EXPECT_DOUBLE_EQ(c.gpu.bf16_flops, 989.4e12);
  EXPECT_EQ(c.total_gpus(), 8);
  EXPECT_EQ(c.scale_up.kind, ScaleUpKind::kNvSwitch);
  EXPECT_EQ(c.scale_up.domain_size, 8);
  EXPECT_DOUBLE_EQ(c.scale_up.bandwidth, 450 * kGB);
  EXPECT_DOUBLE_EQ(c.scale_up.efficiency, 20.6 / 25);
  EXPECT_DOUBLE_EQ(c.scale_up.latency, 0.5e-6);
  EXPECT_TRUE(c.scale_up.nvls);
  EXPECT_EQ(c.scale_out.topology, ScaleOutTopology::kNone);
  EXPECT_EQ(c.scale_up_domains(), 1);
}

TEST_F(ScenarioTest, ProvenanceListsEveryResolvedValueInDisplayOrder) {
  const Scenario one = Load("one.toml", kH100Node);
  const std::string catalog = "catalog h100-sxm";
  EXPECT_THAT(
      one.provenance,
      ElementsAre(
          Pair("gpu", At("one.toml", 3, 7)), Pair("nodes", At("one.toml", 4, 9)),
          Pair("gpus_per_node", At("one.toml", 5, 17)), Pair("gpu.bf16_flops", catalog),
          Pair("gpu.fp8_flops", catalog), Pair("gpu.fp32_flops", catalog), Pair("gpu.hbm", catalog),
          Pair("gpu.hbm_bandwidth", catalog), Pair("gpu.hbm_efficiency", catalog),
          Pair("gpu.sm_count", catalog), Pair("gpu.kernel_floor", catalog),
          Pair("gpu.memory_latency", catalog), Pair("gpu.nvlink_links", catalog),
          Pair("gpu.nvlink_link_bandwidth", catalog), Pair("gpu.nvlink_efficiency", catalog),
          Pair("gpu.channel_bandwidth", catalog), Pair("gpu.nvlink_sharp", catalog),
          Pair("gpu.power_limit", catalog), Pair("scale_up.kind", "default"),
          Pair("scale_up.domain_size", "derived: gpus_per_node"),
          Pair("scale_up.bandwidth", "derived: nvlink_links x nvlink_link_bandwidth"),
          Pair("scale_up.efficiency", catalog), Pair("scale_up.latency", "default"),
          Pair("scale_up.nvls", "derived: gpu.nvlink_sharp"), Pair("scale_out.topology", "default"),
          Pair("nccl_version", "default: the NCCL whose tuning the model follows")));

  const Scenario many =
      Load("many.toml", H100Cluster(64, "topology = \"rail-optimized\"\nnic = \"cx7-400g\"\n"));
  std::vector<std::string> keys;
  for (const auto& [key, origin] : many.provenance) keys.push_back(key);
  EXPECT_THAT(
      std::vector<std::string>(keys.begin() + 24, keys.end()),
      ElementsAre("scale_out.topology", "scale_out.nic", "scale_out.nic.rate",
                  "scale_out.nic.efficiency", "scale_out.nic.latency", "scale_out.nics_per_node",
                  "scale_out.switch", "scale_out.switch.latency", "scale_out.oversubscription",
                  "scale_out.nodes_per_leaf", "scale_out.in_network_reduction", "scale_out.fabric",
                  "scale_out.routing", "scale_out.qps_per_connection", "nccl_version"));
  EXPECT_EQ(many.Origin("scale_out.fabric"), "derived: switch quantum-2");
  EXPECT_EQ(many.Origin("scale_out.routing"), "derived: fabric infiniband");
  EXPECT_EQ(many.cluster.scale_out.routing, netmodel::Routing::kAdaptive);
  EXPECT_EQ(many.Origin("scale_out.topology"), At("many.toml", 7, 12));
  EXPECT_EQ(many.Origin("scale_out.nic"), At("many.toml", 8, 7));
  EXPECT_EQ(many.Origin("scale_out.nic.rate"), "catalog cx7-400g");
  EXPECT_EQ(many.Origin("scale_out.switch"), "default");
  EXPECT_EQ(many.Origin("scale_out.switch.latency"), "catalog quantum-2");
  EXPECT_EQ(many.Origin("scale_out.nics_per_node"), "derived: gpus_per_node");
  EXPECT_EQ(many.Origin("scale_out.nodes_per_leaf"),
            "derived: 32 leaf down-ports / 1 NIC per node");
  EXPECT_EQ(many.Origin("no.such.key"), "");
}

TEST_F(ScenarioTest, NameAndDescription) {
  const Scenario s =
      Load("x.toml", std::string("name = \"My cluster\"\ndescription = \"d\"\n") + kH100Node);
  EXPECT_EQ(s.name, "My cluster");
  EXPECT_EQ(s.description, "d");
  EXPECT_THAT(Error("empty.toml", std::string("name = \"\"\n") + kH100Node),
              HasSubstr("empty.toml:1:8: name: must not be empty"));
}

TEST_F(ScenarioTest, GpuOverridesReplaceCatalogFigures) {
  const Scenario s = Load("gpu.toml", std::string(kH100Node) + R"(
[cluster.gpu_override]
bf16_flops = "1000TFLOPS"
fp8_flops = "2PFLOP/s"
fp32_flops = "60TFLOP/s"
hbm = "96GiB"
hbm_bandwidth = "4TB/s"
sm_count = 114
nvlink_links = 12
nvlink_link_bandwidth = "25GB/s"
nvlink_efficiency = 0.75
channel_bandwidth = "30GB/s"
nvlink_sharp = false
)");
  const netmodel::GpuSpec& g = s.cluster.gpu;
  EXPECT_DOUBLE_EQ(g.bf16_flops, 1000e12);
  EXPECT_DOUBLE_EQ(g.fp8_flops, 2e15);
  EXPECT_DOUBLE_EQ(g.fp32_flops, 60e12);
  EXPECT_DOUBLE_EQ(g.hbm_bytes, 96 * kGiB);
  EXPECT_DOUBLE_EQ(g.hbm_bandwidth, 4e12);
  EXPECT_EQ(g.sm_count, 114);
  EXPECT_EQ(g.nvlink_links, 12);
  EXPECT_DOUBLE_EQ(g.channel_bandwidth, 30 * kGB);
  EXPECT_FALSE(g.nvlink_sharp);
  EXPECT_EQ(s.Origin("gpu.bf16_flops"), "override " + At("gpu.toml", 8, 14));
  EXPECT_EQ(s.Origin("gpu.nvlink_sharp"), "override " + At("gpu.toml", 18, 16));
  // Scale-up defaults follow the overridden GPU.
  EXPECT_DOUBLE_EQ(s.cluster.scale_up.bandwidth, 300 * kGB);
  EXPECT_DOUBLE_EQ(s.cluster.scale_up.efficiency, 0.75);
  EXPECT_EQ(s.Origin("scale_up.efficiency"), "override " + At("gpu.toml", 16, 21));
  EXPECT_FALSE(s.cluster.scale_up.nvls);
}

TEST_F(ScenarioTest, PowerLimitAndClocks) {
  const Scenario capped = Load("capped.toml", std::string(kH100Node) + R"(
[cluster.gpu_override]
power_limit = "500W"
)");
  EXPECT_DOUBLE_EQ(capped.cluster.gpu.power_limit, 500);
  EXPECT_EQ(capped.Origin("gpu.power_limit"), "override " + At("capped.toml", 8, 15));
  EXPECT_TRUE(capped.sustained_clocks);
  EXPECT_DOUBLE_EQ(Load("default.toml", kH100Node).cluster.gpu.power_limit, 700);
  const Scenario boost =
      Load("boost.toml", std::string(kH100Node) + "[timing]\nclocks = \"boost\"\n");
  EXPECT_FALSE(boost.sustained_clocks);
  EXPECT_THAT(Error("idle.toml",
                    std::string(kH100Node) + "[cluster.gpu_override]\npower_limit = \"50W\"\n"),
              HasSubstr("idle.toml:7:15: cluster.gpu_override.power_limit: a power limit must "
                        "be above the GPU's idle draw (70 W for h100-sxm)"));
  EXPECT_THAT(Error("unit.toml",
                    std::string(kH100Node) + "[cluster.gpu_override]\npower_limit = \"500\"\n"),
              HasSubstr("bad power '500'"));
  EXPECT_THAT(Error("a100.toml", R"(
[cluster]
gpu = "a100-sxm-80gb"
nodes = 1
gpus_per_node = 8
gpu_override = { power_limit = "250W" }
)"),
              HasSubstr("cluster.gpu_override.power_limit: no power model for a100-sxm-80gb"));
  EXPECT_TRUE(boost.fp8_promotion);
  EXPECT_FALSE(Load("fast.toml", std::string(kH100Node) + "[timing]\nfp8_accumulation = \"fast\"\n")
                   .fp8_promotion);
  EXPECT_THAT(
      Error("fp8.toml", std::string(kH100Node) + "[timing]\nfp8_accumulation = \"slow\"\n"),
      HasSubstr("fp8.toml:7:20: timing.fp8_accumulation: must be \"as-called\" or \"fast\""));
  EXPECT_THAT(Error("clocks.toml", std::string(kH100Node) + "[timing]\nclocks = \"turbo\"\n"),
              HasSubstr("clocks.toml:7:10: timing.clocks: must be \"sustained\" or \"boost\""));
}

TEST_F(ScenarioTest, OverridingNvlinkSharpAllowsNvlsOnA100) {
  const Scenario s = Load("a100.toml", R"(
[cluster]
gpu = "a100-sxm-80gb"
nodes = 1
gpus_per_node = 8
gpu_override = { nvlink_sharp = true }
scale_up = { nvls = true }
)");
  EXPECT_TRUE(s.cluster.scale_up.nvls);
  EXPECT_EQ(s.Origin("scale_up.nvls"), "override " + At("a100.toml", 7, 21));
}

TEST_F(ScenarioTest, ExplicitScaleUp) {
  const Scenario s = Load("up.toml", std::string(kH100Node) + R"(
[cluster.scale_up]
kind = "nvswitch"
domain_size = 8
bandwidth = "400GB/s"
efficiency = 0.9
latency = "700ns"
nvls = false
)");
  const netmodel::ScaleUp& up = s.cluster.scale_up;
  EXPECT_DOUBLE_EQ(up.bandwidth, 400 * kGB);
  EXPECT_DOUBLE_EQ(up.efficiency, 0.9);
  EXPECT_DOUBLE_EQ(up.data_bandwidth(), 360 * kGB);
  EXPECT_DOUBLE_EQ(up.latency, 700e-9);
  EXPECT_FALSE(up.nvls);
  EXPECT_EQ(s.Origin("scale_up.kind"), "override " + At("up.toml", 8, 8));
  EXPECT_EQ(s.Origin("scale_up.bandwidth"), "override " + At("up.toml", 10, 13));
  EXPECT_EQ(s.Origin("scale_up.latency"), "override " + At("up.toml", 12, 11));
}

TEST_F(ScenarioTest, PcieDefaults) {
  const Scenario s = Load("pcie.toml", std::string(kH100Node) + "scale_up.kind = \"pcie\"\n");
  const netmodel::ScaleUp& up = s.cluster.scale_up;
  EXPECT_EQ(up.kind, ScaleUpKind::kPcie);
  EXPECT_DOUBLE_EQ(up.bandwidth, netmodel::PcieX16Bandwidth(5));
  EXPECT_DOUBLE_EQ(up.efficiency, 24.0 / 31.5);
  EXPECT_DOUBLE_EQ(up.latency, 1e-6);
  EXPECT_FALSE(up.nvls);
  EXPECT_EQ(s.Origin("scale_up.bandwidth"), "derived: PCIe Gen5 x16");
  EXPECT_EQ(s.Origin("scale_up.efficiency"), "default");
  EXPECT_EQ(s.Origin("scale_up.nvls"), "derived: kind = pcie");
}

TEST_F(ScenarioTest, NvlDomainSpansNodes) {
  const Scenario s = Load("nvl.toml", R"(
[cluster]
gpu = "gb200"
nodes = 36
gpus_per_node = 4
[cluster.scale_up]
kind = "nvl"
domain_size = 72
[cluster.scale_out]
topology = "rail-optimized"
nic = "cx7-400g"
)");
  EXPECT_EQ(s.cluster.scale_up.kind, ScaleUpKind::kNvlDomain);
  EXPECT_EQ(s.cluster.scale_up_domains(), 2);
  EXPECT_DOUBLE_EQ(s.cluster.scale_up.bandwidth, 900 * kGB);
  EXPECT_EQ(s.cluster.scale_out.nics_per_node, 4);
  EXPECT_EQ(s.cluster.scale_out.nodes_per_leaf, 32);
}

TEST_F(ScenarioTest, NoNvlinkMeansNoDefaultBandwidth) {
  EXPECT_EQ(Error("nolinks.toml", std::string(kH100Node) + "gpu_override.nvlink_links = 0\n"),
            At("nolinks.toml", 2, 1) +
                ": cluster.scale_up.bandwidth: no default: GPU 'h100-sxm' has no NVLink links; "
                "set the bandwidth or kind = \"pcie\"");
}

TEST_F(ScenarioTest, RailOptimizedNodesPerLeaf) {
  const std::string rail = "topology = \"rail-optimized\"\nnic = \"cx7-400g\"\n";
  // 64 ports, half down: 32 nodes per rail leaf, capped at the cluster's size.
  EXPECT_EQ(Load("r128.toml", H100Cluster(128, rail)).cluster.scale_out.nodes_per_leaf, 32);
  const Scenario small = Load("r16.toml", H100Cluster(16, rail));
  EXPECT_EQ(small.cluster.scale_out.nodes_per_leaf, 16);
  EXPECT_EQ(small.Origin("scale_out.nodes_per_leaf"), "derived: all nodes fit one leaf");
  // Oversubscribing the spine gives each leaf more down-ports: 64 x 3/4 = 48.
  EXPECT_EQ(Load("r3.toml", H100Cluster(128, rail + "oversubscription = 3\n"))
                .cluster.scale_out.nodes_per_leaf,
            48);
  const Scenario s = Load("r.toml", H100Cluster(128, rail));
  EXPECT_EQ(s.cluster.scale_out.nics_per_node, 8);
  EXPECT_EQ(s.cluster.scale_out.leaf_switch.key, "quantum-2");
  EXPECT_DOUBLE_EQ(s.cluster.scale_out.oversubscription, 1.0);
  EXPECT_FALSE(s.cluster.scale_out.in_network_reduction);
  EXPECT_DOUBLE_EQ(s.cluster.scale_out_bandwidth_per_gpu(), 48 * kGB);
}

TEST_F(ScenarioTest, ClosNodesPerLeaf) {
  const std::string clos = "topology = \"clos\"\nnic = \"cx7-400g\"\n";
  // A Clos leaf takes all 8 NICs of each node: 32 down-ports hold 4 nodes.
  EXPECT_EQ(Load("c1.toml", H100Cluster(128, clos)).cluster.scale_out.nodes_per_leaf, 4);
  // 2:1 leaves: 42 of 64 ports down, 5 nodes.
  EXPECT_EQ(Load("c2.toml", H100Cluster(128, clos + "oversubscription = 2.0\n"))
                .cluster.scale_out.nodes_per_leaf,
            5);
  // Explicit, within the leaf's down-ports.
  const Scenario s = Load("c3.toml", H100Cluster(128, clos + "nodes_per_leaf = 2\n"));
  EXPECT_EQ(s.cluster.scale_out.nodes_per_leaf, 2);
  EXPECT_EQ(s.Origin("scale_out.nodes_per_leaf"), "override " + At("c3.toml", 9, 18));
  // Too many NICs per node for one leaf.
  EXPECT_EQ(Error("c4.toml", H100Cluster(16, clos + "nics_per_node = 40\n")),
            At("c4.toml", 9, 17) +
                ": cluster.scale_out.nics_per_node: 40 NICs per node do not fit the 32 "
                "down-ports of one 'quantum-2' leaf");
}

TEST_F(ScenarioTest, SingleSwitch) {
  const std::string single = "topology = \"single-switch\"\nnic = \"cx7-400g\"\n";
  const Scenario s = Load("s.toml", H100Cluster(8, single));
  EXPECT_EQ(s.cluster.scale_out.topology, ScaleOutTopology::kSingleSwitch);
  EXPECT_EQ(s.cluster.scale_out.nodes_per_leaf, 8);
  EXPECT_EQ(Error("s2.toml", H100Cluster(8, single + "oversubscription = 2.0\n")),
            At("s2.toml", 9, 20) +
                ": cluster.scale_out.oversubscription: must be 1.0 for topology "
                "\"single-switch\" (one switch has no uplinks), got 2");
  EXPECT_EQ(Error("s3.toml", H100Cluster(8, single + "nodes_per_leaf = 4\n")),
            At("s3.toml", 9, 18) +
                ": cluster.scale_out.nodes_per_leaf: must equal cluster.nodes (8) for topology "
                "\"single-switch\", got 4");
}

TEST_F(ScenarioTest, NodesPerLeafCannotExceedNodes) {
  EXPECT_EQ(Error("n.toml", H100Cluster(4,
                                        "topology = \"rail-optimized\"\nnic = \"cx7-400g\"\n"
                                        "nodes_per_leaf = 8\n")),
            At("n.toml", 9, 18) +
                ": cluster.scale_out.nodes_per_leaf: must not exceed cluster.nodes (4), got 8");
}

// InfiniBand switches route adaptively, Ethernet ones hash each queue pair (ECMP); either can
// be set, and routing is no longer a [network] key.
TEST_F(ScenarioTest, FabricDecidesRoutingUnlessSet) {
  const std::string rail = "topology = \"rail-optimized\"\nnic = \"cx7-400g\"\n";
  const Scenario ib = Load("ib.toml", H100Cluster(64, rail));
  EXPECT_EQ(ib.cluster.scale_out.fabric, netmodel::Fabric::kInfiniBand);
  EXPECT_EQ(ib.cluster.scale_out.routing, netmodel::Routing::kAdaptive);
  EXPECT_EQ(ib.cluster.scale_out.qps_per_connection, 1);
  const Scenario eth = Load("eth.toml", H100Cluster(64, rail + "switch = \"ethernet-400g\"\n"));
  EXPECT_EQ(eth.cluster.scale_out.fabric, netmodel::Fabric::kEthernet);
  EXPECT_EQ(eth.cluster.scale_out.routing, netmodel::Routing::kEcmp);
  const Scenario set =
      Load("set.toml", H100Cluster(64, rail + "fabric = \"roce\"\nrouting = \"adaptive\"\n"
                                              "qps_per_connection = 4\n"));
  EXPECT_EQ(set.cluster.scale_out.fabric, netmodel::Fabric::kEthernet);
  EXPECT_EQ(set.cluster.scale_out.routing, netmodel::Routing::kAdaptive);
  EXPECT_EQ(set.cluster.scale_out.qps_per_connection, 4);
  EXPECT_EQ(
      Error("q.toml", H100Cluster(64, rail + "qps_per_connection = 0\n")),
      At("q.toml", 9, 22) + ": cluster.scale_out.qps_per_connection: must be at least 1, got 0");
  EXPECT_NE(Error("r.toml", H100Cluster(64, rail) + "[network]\nrouting = \"ecmp\"\n")
                .find("network.routing: routing is a property of the fabric: set "
                      "cluster.scale_out.routing"),
            std::string::npos);
}

TEST_F(ScenarioTest, Cx8DefaultsToAnXdrSwitch) {
  const Scenario s =
      Load("cx8.toml", H100Cluster(512, "topology = \"rail-optimized\"\nnic = \"cx8-800g\"\n"));
  EXPECT_EQ(s.cluster.scale_out.leaf_switch.key, "quantum-x800");
  EXPECT_EQ(s.cluster.scale_out.nodes_per_leaf, 72);  // 144 ports, half down
  EXPECT_DOUBLE_EQ(s.cluster.scale_out.nic.line_rate, 100 * kGB);
}

TEST_F(ScenarioTest, NicOverrides) {
  const Scenario s =
      Load("nic.toml", H100Cluster(16,
                                   "topology = \"rail-optimized\"\nnic = \"cx7-400g\"\n"
                                   "nic_override = { rate = \"200Gbps\", efficiency = 0.9, "
                                   "latency = \"1us\" }\nin_network_reduction = true\n"));
  const netmodel::ScaleOut& out = s.cluster.scale_out;
  EXPECT_DOUBLE_EQ(out.nic.line_rate, 25 * kGB);
  EXPECT_DOUBLE_EQ(out.nic.efficiency, 0.9);
  EXPECT_DOUBLE_EQ(out.nic.latency, 1e-6);
  EXPECT_TRUE(out.in_network_reduction);
  EXPECT_DOUBLE_EQ(s.cluster.scale_out_bandwidth_per_gpu(), 22.5 * kGB);
  EXPECT_EQ(s.Origin("scale_out.nic.rate"), "override " + At("nic.toml", 9, 25));
  EXPECT_EQ(s.Origin("scale_out.nic.latency"), "override " + At("nic.toml", 9, 64));
  EXPECT_EQ(s.Origin("scale_out.in_network_reduction"), "override " + At("nic.toml", 10, 24));
}

TEST_F(ScenarioTest, TopologyNoneOnOneNode) {
  const Scenario s = Load("none.toml", H100Cluster(1, "topology = \"none\"\n"));
  EXPECT_EQ(s.cluster.scale_out.topology, ScaleOutTopology::kNone);
  EXPECT_EQ(s.Origin("scale_out.topology"), At("none.toml", 7, 12));
  EXPECT_EQ(s.Origin("scale_out.nic"), "");
}

TEST_F(ScenarioTest, IncludeMergesTablesDeeply) {
  Write("base/common.toml", R"(name = "common"
description = "base description"
[cluster]
gpu = "h100-sxm"
nodes = 16
gpus_per_node = 8
[cluster.scale_out]
topology = "rail-optimized"
nic = "cx7-400g"
)");
  Write("base/bigger.toml", "[cluster]\nnodes = 32\n");
  const Scenario s = Load("top.toml", R"(include = ["base/common.toml", "base/bigger.toml"]
[cluster.scale_out]
topology = "clos"
)");
  EXPECT_EQ(s.name, "top");  // name and description are not inherited
  EXPECT_EQ(s.description, "");
  EXPECT_EQ(s.cluster.nodes, 32);  // the later include wins
  EXPECT_EQ(s.cluster.scale_out.topology, ScaleOutTopology::kClos);
  EXPECT_EQ(s.cluster.scale_out.nic.key, "cx7-400g");  // kept from the base's table
  // Positions name the file each value came from, as the include path was joined.
  const std::string base = (dir_ / "base").string();
  EXPECT_EQ(s.Origin("gpu"), base + "/common.toml:4:7");
  EXPECT_EQ(s.Origin("nodes"), base + "/bigger.toml:2:9");
  EXPECT_EQ(s.Origin("scale_out.topology"), At("top.toml", 3, 12));
  EXPECT_EQ(s.Origin("scale_out.nic"), base + "/common.toml:9:7");
}

TEST_F(ScenarioTest, IncludesNestAndResolveRelativeToTheIncludingFile) {
  Write("a/b/leaf.toml", kH100Node);
  Write("a/middle.toml", "include = \"b/leaf.toml\"\n[cluster]\ngpus_per_node = 4\n");
  const Scenario s = Load("top.toml", "include = \"a/middle.toml\"\n");
  EXPECT_EQ(s.cluster.gpus_per_node, 4);
  EXPECT_EQ(s.Origin("gpu"), (dir_ / "a/b/leaf.toml").string() + ":3:7");
}

TEST_F(ScenarioTest, DiamondIncludeIsNotACycle) {
  Write("base.toml", kH100Node);
  Write("left.toml", "include = \"base.toml\"\n");
  Write("right.toml", "include = \"base.toml\"\n");
  const Scenario s = Load("top.toml", "include = [\"left.toml\", \"right.toml\"]\n");
  EXPECT_EQ(s.cluster.total_gpus(), 8);
}

TEST_F(ScenarioTest, IncludeCycleNamesTheChain) {
  Write("a.toml", "include = \"b.toml\"\n");
  Write("b.toml", "\ninclude = \"a.toml\"\n");
  const std::string a = (dir_ / "a.toml").string();
  const std::string b = (dir_ / "b.toml").string();
  EXPECT_EQ(Error("a.toml", "include = \"b.toml\"\n"),
            b + ":2:11: include: include cycle: " + a + " -> " + b + " -> " + a);
}

// Each file is read once: 30 files each including the next twice would be 2^30 reads.
TEST_F(ScenarioTest, AFileIncludedManyTimesIsReadOnce) {
  Write("f30.toml", kH100Node);
  for (int i = 29; i >= 1; --i) {
    const std::string next = "f" + std::to_string(i + 1) + ".toml";
    Write("f" + std::to_string(i) + ".toml", "include = [\"" + next + "\", \"" + next + "\"]\n");
  }
  const Scenario s = Load("top.toml", "include = [\"f1.toml\", \"f1.toml\"]\n");
  EXPECT_EQ(s.cluster.total_gpus(), 8);
  EXPECT_EQ(s.Origin("gpu"), (dir_ / "f30.toml").string() + ":3:7");
}

// A chain of includes deeper than 64 files is refused (10,000 used to overflow the stack).
TEST_F(ScenarioTest, IncludesNestAtMost64Deep) {
  for (int i = 1; i < 1000; ++i)
    Write("c" + std::to_string(i) + ".toml", "include = \"c" + std::to_string(i + 1) + ".toml\"\n");
  Write("c1000.toml", kH100Node);
  EXPECT_EQ(Error("c0.toml", "include = \"c1.toml\"\n"),
            At("c63.toml", 1, 11) + ": include: includes nest deeper than 64 files (from " +
                (dir_ / "c0.toml").string() + ")");
}

TEST_F(ScenarioTest, IncludeOfADirectory) {
  fs::create_directories(dir_ / "sub");
  EXPECT_EQ(Error("d.toml", "include = \"sub\"\n"),
            At("d.toml", 1, 11) + ": include: cannot open scenario file '" +
                (dir_ / "sub").string() + "': Is a directory");
}

TEST_F(ScenarioTest, MissingFile) {
  const std::string path = (dir_ / "absent.toml").string();
  Result<Scenario> s = LoadScenario(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), path + ": cannot open scenario file: No such file or directory");
  Result<Scenario> dir = LoadScenario(dir_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().message(), dir_.string() + ": cannot open scenario file: Is a directory");
}

TEST_F(ScenarioTest, IntegersAreAcceptedWhereNumbersAre) {
  const Scenario s = Load("i.toml", std::string(kH100Node) + "scale_up.efficiency = 1\n");
  EXPECT_DOUBLE_EQ(s.cluster.scale_up.efficiency, 1.0);
}

// Scenario inputs must be regular files: a FIFO (an include of one used to block forever)
// and /dev/zero (which never ends) are refused at once, naming the file.
TEST_F(ScenarioTest, FilesThatAreNotRegularAreRefused) {
  const std::string fifo = (dir_ / "fifo.toml").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(LoadScenario(fifo).status().message(),
            fifo + ": cannot open scenario file: not a regular file (a FIFO, device or socket)");
  EXPECT_EQ(Error("inc.toml", "include = \"fifo.toml\"\n" + std::string(kH100Node)),
            At("inc.toml", 1, 11) + ": include: cannot open scenario file '" + fifo +
                "': not a regular file (a FIFO, device or socket)");
  EXPECT_EQ(LoadScenario("/dev/zero").status().message(),
            "/dev/zero: cannot open scenario file: not a regular file (a FIFO, device or socket)");
}

TEST_F(ScenarioTest, ValueErrorsPointAtTheValue) {
  EXPECT_EQ(Error("e.toml", std::string(kH100Node) + "scale_up.efficiency = 0.0\n"),
            At("e.toml", 6, 23) + ": cluster.scale_up.efficiency: must be in [0.01, 1], got 0");
  EXPECT_EQ(Error("b.toml", std::string(kH100Node) + "scale_up.bandwidth = \"0GB/s\"\n"),
            At("b.toml", 6, 22) +
                ": cluster.scale_up.bandwidth: '0GB/s' is out of range: a bandwidth must be "
                "within 1MB/s to 1000TB/s");
  EXPECT_EQ(Error("f.toml", std::string(kH100Node) + "scale_up.efficiency = nan\n"),
            At("f.toml", 6, 23) + ": cluster.scale_up.efficiency: expected a finite number");
  EXPECT_EQ(Error("l.toml", std::string("include = [[\"x\"]]\n") + kH100Node),
            At("l.toml", 1, 12) + ": include: expected a string, got an array");
  // `include` belongs at the top of a file, not inside a table.
  EXPECT_EQ(Error("t.toml", std::string(kH100Node) + "include = \"x.toml\"\n"),
            At("t.toml", 6, 1) +
                ": cluster.include: unknown key (expected one of: gpu, nodes, "
                "gpus_per_node, gpu_override, scale_up, scale_out, nccl_version)");
}

TEST_F(ScenarioTest, ErrorsAreOneLine) {
  const std::string message =
      Error("multi.toml", std::string(kH100Node) + "scale_up.bandwidth = \"\"\"450\nGB/s\"\"\"\n");
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// The reader's pieces, directly.

TEST(SuggestTest, EditDistanceThenPrefix) {
  const std::vector<std::string_view> keys = {"gpu", "nodes", "gpus_per_node", "scale_up",
                                              "scale_out"};
  EXPECT_EQ(Suggest("gpus_per_nod", keys), "gpus_per_node");
  EXPECT_EQ(Suggest("node", keys), "nodes");
  EXPECT_EQ(Suggest("scale_upp", keys), "scale_up");
  EXPECT_EQ(Suggest("scale_ot", keys), "scale_out");
  EXPECT_EQ(Suggest("gpus_per", keys), "gpus_per_node");  // prefix, 5 edits away
  EXPECT_EQ(Suggest("nodes_count", keys), "nodes");       // the unknown key extends it
  EXPECT_EQ(Suggest("scale_up_kind", keys), "scale_up");  // longest such key
  EXPECT_EQ(Suggest("colour", keys), "");
  EXPECT_EQ(Suggest("x", keys), "");
}

TEST(TomlReaderTest, KeepsPositionsAndSourceOrder) {
  Result<TomlNode> doc = ParseToml("b = 1\n[t]\n  z = 'x'\n  a = 2.5\n", "f.toml");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  ASSERT_EQ(doc->entries.size(), 2u);
  EXPECT_EQ(doc->entries[0].key, "b");  // file order, not alphabetical
  const TomlNode::Entry* t = doc->Find("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->key_pos.ToString(), "f.toml:2:2");
  EXPECT_EQ(t->value.pos.ToString(), "f.toml:2:1");
  ASSERT_EQ(t->value.entries.size(), 2u);
  EXPECT_EQ(t->value.entries[0].key, "z");
  EXPECT_EQ(t->value.entries[0].value.pos.ToString(), "f.toml:3:7");
  EXPECT_EQ(t->value.entries[1].value.type, TomlNode::Type::kFloat);
  EXPECT_DOUBLE_EQ(t->value.entries[1].value.float_value, 2.5);
}

TEST(TomlReaderTest, MergeReplacesValuesAndMergesTables) {
  Result<TomlNode> base = ParseToml("a = 1\nl = [1, 2]\n[t]\nx = 1\ny = 2\n", "base.toml");
  Result<TomlNode> top = ParseToml("l = [3]\n[t]\ny = 'two'\nz = 3\n", "top.toml");
  ASSERT_TRUE(base.ok() && top.ok());
  TomlNode merged = *base;
  MergeInto(merged, *top);
  EXPECT_EQ(merged.Find("a")->value.integer_value, 1);
  EXPECT_EQ(merged.Find("l")->value.elements.size(), 1u);  // arrays are replaced
  const TomlNode& t = merged.Find("t")->value;
  EXPECT_EQ(t.pos.file, "top.toml");
  EXPECT_EQ(t.Find("x")->value.pos.ToString(), "base.toml:4:5");
  EXPECT_EQ(t.Find("y")->value.string_value, "two");
  EXPECT_EQ(t.Find("y")->value.pos.ToString(), "top.toml:3:5");
  EXPECT_EQ(t.Find("z")->value.integer_value, 3);
}

TEST(TomlReaderTest, SyntaxErrorsAreOneLineWithPosition) {
  Result<TomlNode> doc = ParseToml("a = 1\nb = [1,\n", "bad.toml");
  ASSERT_FALSE(doc.ok());
  EXPECT_THAT(doc.status().message(), ::testing::StartsWith("bad.toml:"));
  EXPECT_THAT(doc.status().message(), HasSubstr(": syntax error: "));
  EXPECT_EQ(doc.status().message().find('\n'), std::string::npos);
}

}  // namespace
}  // namespace myriad::emulator
