// The scenarios shipped in scenarios/: every one loads and validates, and each models what its
// header says. Also `myriad check` on them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "myriad/emulator/scenario.h"
#include "tests/support/run_command.h"

namespace myriad::emulator {
namespace {

namespace fs = std::filesystem;
using netmodel::ScaleOutTopology;
using netmodel::ScaleUpKind;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

constexpr double kGB = 1e9;
constexpr double kGiB = 1024.0 * 1024 * 1024;

// Paths under scenarios/ without ".toml": "h100-x128", "validation/megatron-a100-1.7b".
std::vector<std::string> BundledNames() {
  std::vector<std::string> names;
  for (const char* folder : {"", "validation/"}) {
    for (const fs::directory_entry& entry :
         fs::directory_iterator(fs::path(MYRIAD_SOURCE_DIR) / "scenarios" / folder)) {
      if (entry.is_regular_file() && entry.path().extension() == ".toml") {
        names.push_back(folder + entry.path().stem().string());
      }
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

class BundledTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { fs::current_path(MYRIAD_SOURCE_DIR); }
};

TEST_P(BundledTest, LoadsAndValidates) {
  const std::string path = "scenarios/" + GetParam() + ".toml";
  Result<Scenario> s = LoadScenario(path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->cluster.Validate().ok());
  EXPECT_EQ(s->name, fs::path(GetParam()).filename().string());
  EXPECT_FALSE(s->description.empty());
  EXPECT_GE(s->cluster.total_gpus(), 8);
  // A comment header says what the file models.
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first.rfind("# ", 0), 0u) << first;
}

// Test names allow only letters, digits and underscores.
std::string TestName(const ::testing::TestParamInfo<std::string>& param) {
  std::string name = param.param;
  for (char& c : name) {
    if (c == '-' || c == '/' || c == '.') c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, BundledTest, ::testing::ValuesIn(BundledNames()), TestName);

Scenario Load(const std::string& name) {
  fs::current_path(MYRIAD_SOURCE_DIR);
  Result<Scenario> s = LoadScenario("scenarios/" + name + ".toml");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : Scenario{};
}

TEST(BundledFactsTest, AllExpectedScenariosAreThere) {
  EXPECT_THAT(
      BundledNames(),
      ::testing::IsSupersetOf({"dgx-a100", "dgx-h100", "h100-x16", "h100-x128", "h100-x1024",
                               "h200-x128", "b200-x128", "gb200-nvl72-x8", "h100-x128-clos-2to1",
                               "llama3-8b-h100-x64", "validation/selene-a100"}));
}

// One row of the SC'21 table (shared/reference/training.md).
struct MegatronRow {
  const char* params;
  int heads, hidden, layers, tp, pp, gpus, global_batch;
};

TEST(BundledFactsTest, SeleneA100) {
  const netmodel::Cluster c = Load("validation/selene-a100").cluster;
  EXPECT_EQ(c.gpu.key, "a100-sxm-80gb");
  EXPECT_EQ(c.total_gpus(), 3072);
  EXPECT_EQ(c.scale_up.kind, ScaleUpKind::kNvSwitch);
  EXPECT_EQ(c.scale_out.topology, ScaleOutTopology::kRailOptimized);
  EXPECT_EQ(c.scale_out.nic.key, "cx6-200g");
  EXPECT_EQ(c.scale_out.nics_per_node, 8);
  EXPECT_EQ(c.scale_out.leaf_switch.key, "quantum-hdr");
  EXPECT_EQ(c.scale_out.nodes_per_leaf, 20);  // a SuperPOD scalable unit
  EXPECT_DOUBLE_EQ(c.scale_out_bandwidth_per_gpu(), 24 * kGB);
}

TEST(BundledFactsTest, MegatronRowsMatchTheTable) {
  const MegatronRow rows[] = {
      {"1.7b", 24, 2304, 24, 1, 1, 32, 512},          {"3.6b", 32, 3072, 30, 2, 1, 64, 512},
      {"7.5b", 32, 4096, 36, 4, 1, 128, 512},         {"18.4b", 48, 6144, 40, 8, 1, 256, 1024},
      {"39.1b", 64, 8192, 48, 8, 2, 512, 1536},       {"76.1b", 80, 10240, 60, 8, 4, 1024, 1792},
      {"145.6b", 96, 12288, 80, 8, 8, 1536, 2304},    {"310.1b", 128, 16384, 96, 8, 16, 1920, 2160},
      {"529.6b", 128, 20480, 105, 8, 35, 2520, 2520}, {"1008b", 160, 25600, 128, 8, 64, 3072, 3072},
  };
  for (const MegatronRow& row : rows) {
    const std::string name = std::string("validation/megatron-a100-") + row.params;
    SCOPED_TRACE(name);
    const Scenario s = Load(name);
    ASSERT_TRUE(s.workload.has_value());
    const WorkloadSpec& w = *s.workload;
    EXPECT_EQ(s.cluster.total_gpus(), row.gpus);
    EXPECT_EQ(s.cluster.scale_out.nic.key, "cx6-200g");
    EXPECT_EQ(w.model.preset, std::string("megatron-") + row.params);
    EXPECT_EQ(w.model.heads, row.heads);
    EXPECT_EQ(w.model.hidden, row.hidden);
    EXPECT_EQ(w.model.layers, row.layers);
    EXPECT_EQ(w.model.seq, 2048);
    EXPECT_EQ(w.model.vocab, 51200);
    EXPECT_EQ(w.parallel.tp, row.tp);
    EXPECT_EQ(w.parallel.pp, row.pp);
    EXPECT_EQ(w.parallel.dp, row.gpus / (row.tp * row.pp));
    EXPECT_EQ(w.training.global_batch, row.global_batch);
    EXPECT_EQ(w.training.micro_batch, 1);
    EXPECT_EQ(w.training.recompute, Recompute::kFull);
    EXPECT_EQ(w.training.precision, DataType::kBfloat16);
    // The name's parameter count, by Megatron's formula, within 3% (the paper rounds it).
    const double params = std::stod(row.params) * 1e9;
    EXPECT_NEAR(w.parameters() / params, 1.0, 0.03);
  }
}

TEST(BundledFactsTest, Llama3On64H100) {
  const Scenario s = Load("llama3-8b-h100-x64");
  EXPECT_EQ(s.cluster.total_gpus(), 64);
  EXPECT_EQ(s.cluster.scale_out.nic.key, "cx7-400g");
  ASSERT_TRUE(s.workload.has_value());
  const WorkloadSpec& w = *s.workload;
  EXPECT_EQ(w.model.preset, "llama3-8b");
  EXPECT_EQ(w.parallel.tp, 8);
  EXPECT_EQ(w.parallel.pp, 1);
  EXPECT_EQ(w.parallel.dp, 8);
  EXPECT_EQ(w.training.global_batch, 64);
  EXPECT_EQ(w.micro_batches(), 8);
  EXPECT_EQ(w.training.recompute, Recompute::kSelective);
}

TEST(BundledFactsTest, DgxA100) {
  const netmodel::Cluster c = Load("dgx-a100").cluster;
  EXPECT_EQ(c.gpu.key, "a100-sxm-80gb");
  EXPECT_EQ(c.total_gpus(), 8);
  EXPECT_EQ(c.scale_up_domains(), 1);
  EXPECT_DOUBLE_EQ(c.scale_up.bandwidth, 300 * kGB);
  EXPECT_FALSE(c.scale_up.nvls);
  EXPECT_EQ(c.scale_out.topology, ScaleOutTopology::kNone);
}

TEST(BundledFactsTest, DgxH100) {
  const Scenario s = Load("dgx-h100");
  const netmodel::Cluster& c = s.cluster;
  EXPECT_EQ(c.gpu.key, "h100-sxm");
  EXPECT_EQ(c.total_gpus(), 8);
  EXPECT_EQ(c.scale_up.kind, ScaleUpKind::kNvSwitch);
  EXPECT_DOUBLE_EQ(c.scale_up.bandwidth, 450 * kGB);
  EXPECT_TRUE(c.scale_up.nvls);
  EXPECT_THAT(std::string(s.Origin("scale_up.nvls")),
              HasSubstr("override scenarios/dgx-h100.toml:"));
  EXPECT_EQ(c.scale_out.topology, ScaleOutTopology::kNone);
}

TEST(BundledFactsTest, H100RailClusters) {
  for (const auto& [name, nodes] :
       {std::pair{"h100-x16", 16}, std::pair{"h100-x128", 128}, std::pair{"h100-x1024", 1024}}) {
    SCOPED_TRACE(name);
    const netmodel::Cluster c = Load(name).cluster;
    EXPECT_EQ(c.nodes, nodes);  // the suffix counts nodes, not GPUs
    EXPECT_EQ(c.total_gpus(), nodes * 8);
    EXPECT_EQ(c.scale_up_domains(), nodes);
    EXPECT_EQ(c.scale_out.topology, ScaleOutTopology::kRailOptimized);
    EXPECT_EQ(c.scale_out.nic.key, "cx7-400g");
    EXPECT_EQ(c.scale_out.nics_per_node, 8);
    EXPECT_EQ(c.scale_out.leaf_switch.key, "quantum-2");
    EXPECT_EQ(c.scale_out.nodes_per_leaf, std::min(nodes, 32));
    EXPECT_DOUBLE_EQ(c.scale_out_bandwidth_per_gpu(), 48 * kGB);
  }
  EXPECT_EQ(Load("h100-x1024").cluster.total_gpus(), 8192);
}

TEST(BundledFactsTest, H200AndB200) {
  const netmodel::Cluster h200 = Load("h200-x128").cluster;
  EXPECT_EQ(h200.total_gpus(), 1024);
  EXPECT_DOUBLE_EQ(h200.gpu.hbm_bytes, 141 * kGiB);
  const netmodel::Cluster b200 = Load("b200-x128").cluster;
  EXPECT_EQ(b200.total_gpus(), 1024);
  EXPECT_DOUBLE_EQ(b200.scale_up.bandwidth, 900 * kGB);
  EXPECT_EQ(b200.scale_out.nic.key, "cx7-400g");  // HGX B200 ships with ConnectX-7
}

TEST(BundledFactsTest, Gb200Nvl72Racks) {
  const netmodel::Cluster c = Load("gb200-nvl72-x8").cluster;
  EXPECT_EQ(c.nodes, 144);  // 8 racks x 18 trays
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_EQ(c.total_gpus(), 576);
  EXPECT_EQ(c.scale_up.kind, ScaleUpKind::kNvlDomain);
  EXPECT_EQ(c.scale_up.domain_size, 72);
  EXPECT_EQ(c.scale_up_domains(), 8);
  EXPECT_TRUE(c.scale_up.nvls);
  EXPECT_EQ(c.scale_out.nic.key, "cx7-400g");
  EXPECT_EQ(c.scale_out.nics_per_node, 4);
  EXPECT_EQ(c.scale_out.topology, ScaleOutTopology::kRailOptimized);
}

TEST(BundledFactsTest, ClosVariantIncludesTheRailCluster) {
  const Scenario s = Load("h100-x128-clos-2to1");
  const netmodel::Cluster& c = s.cluster;
  EXPECT_EQ(c.total_gpus(), 1024);
  EXPECT_EQ(c.scale_out.topology, ScaleOutTopology::kClos);
  EXPECT_DOUBLE_EQ(c.scale_out.oversubscription, 2.0);
  EXPECT_EQ(c.scale_out.nic.key, "cx7-400g");
  EXPECT_EQ(c.scale_out.nodes_per_leaf, 5);  // 42 of 64 ports down, 8 NICs per node
  EXPECT_THAT(std::string(s.Origin("nodes")), HasSubstr("scenarios/h100-x128.toml:"));
  EXPECT_THAT(std::string(s.Origin("scale_out.oversubscription")),
              HasSubstr("scenarios/h100-x128-clos-2to1.toml:"));
}

// `myriad check` on the bundled scenarios.

std::pair<int, std::string> RunCommand(const std::string& command) {
  return myriad::testing::RunCommand(command + " 2>&1");
}

TEST(CheckCommandTest, EveryBundledScenarioChecksClean) {
  fs::current_path(MYRIAD_SOURCE_DIR);
  for (const std::string& name : BundledNames()) {
    SCOPED_TRACE(name);
    const auto [status, output] =
        RunCommand(std::string(MYRIAD_BINARY) + " check scenarios/" + name + ".toml");
    EXPECT_EQ(status, 0) << output;
    EXPECT_THAT(output, HasSubstr("  name "));
  }
}

TEST(CheckCommandTest, EveryFigureNamesItsOrigin) {
  fs::current_path(MYRIAD_SOURCE_DIR);
  const auto [status, output] =
      RunCommand(std::string(MYRIAD_BINARY) + " check scenarios/h100-x128.toml");
  ASSERT_EQ(status, 0) << output;
  EXPECT_EQ(RunCommand(std::string(MYRIAD_BINARY) + " check scenarios/h100-x128.toml").second,
            output);

  std::istringstream lines(output);
  std::string line, section;
  std::size_t origin_column = std::string::npos;
  int figures = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (line[0] != ' ') {
      section = line;
      continue;
    }
    if (section == "scenario") continue;  // name, file, description: not figures
    SCOPED_TRACE(line);
    ASSERT_EQ(line.back(), ']');
    const std::size_t bracket = line.rfind('[');
    ASSERT_NE(bracket, std::string::npos);
    if (origin_column == std::string::npos) origin_column = bracket;
    EXPECT_EQ(bracket, origin_column);  // aligned
    ++figures;
  }
  EXPECT_GE(figures, 35);
  EXPECT_THAT(output, HasSubstr("  file "));
  EXPECT_THAT(output, MatchesRegex("(.|\n)*  total GPUs +1024 +\\[derived: nodes x gpus_per_node\\]"
                                   "(.|\n)*"));
  EXPECT_THAT(output, MatchesRegex("(.|\n)*  GPU +NVIDIA H100 80GB HBM3 \\(h100-sxm\\) +"
                                   "\\[scenarios/h100-x128.toml:[0-9]+:7\\](.|\n)*"));
  EXPECT_THAT(output,
              MatchesRegex("(.|\n)*  BF16 peak +989.4 TFLOP/s +\\[catalog h100-sxm\\](.|\n)*"));
  EXPECT_THAT(output, MatchesRegex("(.|\n)*  HBM +80 GiB +\\[catalog h100-sxm\\](.|\n)*"));
  EXPECT_THAT(output, MatchesRegex("(.|\n)*  bandwidth \\(signalling\\) +450 GB/s +"
                                   "\\[derived: nvlink_links x nvlink_link_bandwidth\\](.|\n)*"));
  EXPECT_THAT(output, MatchesRegex("(.|\n)*  bandwidth \\(data\\) +370.8 GB/s +(.|\n)*"));
  EXPECT_THAT(output, MatchesRegex("(.|\n)*  latency +500 ns +\\[default\\](.|\n)*"));
  EXPECT_THAT(output, MatchesRegex("(.|\n)*  bandwidth per GPU \\(data\\) +48 GB/s(.|\n)*"));
  EXPECT_THAT(output, MatchesRegex("(.|\n)*  nodes per leaf +32 +\\[derived(.|\n)*"));
}

}  // namespace
}  // namespace myriad::emulator
