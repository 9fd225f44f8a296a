// `myriad simulate` end to end, in-process: the workload outputs in the summary and report,
// byte-identical reports, and one-line errors for what it cannot run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace myriad::cli {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

constexpr const char* kScenario = MYRIAD_SOURCE_DIR "/scenarios/llama3-8b-h100-x64.toml";

TEST(SimulateCommandTest, PrintsAndReportsTheWorkloadFigures) {
  const std::string report = ::testing::TempDir() + "myriad_simulate_test.json";
  std::ostringstream out, err;
  ASSERT_EQ(RunSimulate({kScenario, "--report", report}, out, err), 0) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("tokens per second"));
  EXPECT_THAT(out.str(), HasSubstr("tp 8 x pp 1 x dp 8"));
  const std::string json = ReadFile(report);
  for (const char* key :
       {"\"command\": \"simulate\"", "\"gpus\": 64", "\"tokens_per_second\"",
        "\"model_tflops_per_gpu\"", "\"mfu\"", "\"pipeline_bubble_fraction\"",
        "\"micro_batches\": 8", "one data-parallel replica simulated",
        "\"exposed_comm_us_per_iteration\": {\"tp\": ", "\"memory_per_gpu_bytes\": {\"stage\": "})
    EXPECT_THAT(json, HasSubstr(key));
  // Deterministic: the same run writes the same bytes.
  std::ostringstream out2, err2;
  ASSERT_EQ(RunSimulate({kScenario, "--report", report + "2"}, out2, err2), 0);
  EXPECT_EQ(ReadFile(report + "2"), json);
}

// FP8 training as Transformer Engine runs it: the forward's GEMMs accumulate fast, the
// backward's promote to FP32, which Hopper pays for; the summary and report say how much,
// and --fp8-accumulation fast takes it away.
TEST(SimulateCommandTest, Fp8PromotionIsShownAndSwitchable) {
  const std::string scenario =
      MYRIAD_SOURCE_DIR "/scenarios/validation/megatron-bridge-h100-llama3-8b.toml";
  const std::string report = ::testing::TempDir() + "myriad_simulate_fp8.json";
  std::ostringstream out, err;
  ASSERT_EQ(RunSimulate({scenario, "--report", report}, out, err), 0) << err.str();
  // Three GEMMs per linear layer, two of them backward.
  EXPECT_THAT(out.str(), HasSubstr("FP8 accumulation: 4096 of 6144 FP8 GEMMs promote"));
  EXPECT_THAT(ReadFile(report),
              HasSubstr("\"fp8_accumulation\": {\"mode\": \"as-called\", \"fp8_gemms\": 6144, "
                        "\"promoted\": 4096"));
  std::ostringstream fast_out, fast_err;
  ASSERT_EQ(RunSimulate({scenario, "--fp8-accumulation", "fast"}, fast_out, fast_err), 0);
  EXPECT_THAT(fast_out.str(), HasSubstr("6144 FP8 GEMMs all with fast accumulation"));
  auto step = [](const std::string& text) {
    return std::stod(text.substr(text.find("iteration time") + 14));
  };
  EXPECT_LT(step(fast_out.str()), step(out.str()) * 0.98);
  std::ostringstream bad_out, bad_err;
  EXPECT_NE(RunSimulate({scenario, "--fp8-accumulation", "slow"}, bad_out, bad_err), 0);
  EXPECT_THAT(bad_err.str(), HasSubstr("--fp8-accumulation must be as-called or fast"));
}

TEST(SimulateCommandTest, ScenarioWithoutWorkloadIsBadInput) {
  std::ostringstream out, err;
  EXPECT_EQ(RunSimulate({MYRIAD_SOURCE_DIR "/scenarios/dgx-h100.toml"}, out, err), kExitBadInput);
  EXPECT_THAT(err.str(), HasSubstr("no [workload] to simulate"));
}

TEST(SimulateCommandTest, PredictedOutOfMemoryIsAnError) {
  // Llama 3 70B on one node without model parallelism: 18 B per parameter alone exceed HBM.
  const std::string path = ::testing::TempDir() + "myriad_simulate_oom.toml";
  std::ofstream(path) << "[cluster]\ngpu = \"h100-sxm\"\nnodes = 1\ngpus_per_node = 8\n"
                         "[workload]\nmodel = \"llama3-70b\"\n"
                         "[workload.training]\nglobal_batch = 8\n";
  std::ostringstream out, err;
  EXPECT_NE(RunSimulate({path}, out, err), 0);
  EXPECT_THAT(err.str(), HasSubstr("predicted out of memory on rank 0"));
}

}  // namespace
}  // namespace myriad::cli
