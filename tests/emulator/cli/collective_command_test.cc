// `myriad collective` end to end, in-process: output format, options, errors, goldens.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "myriad/netmodel/collective.h"

namespace myriad::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Output {
  int status;
  std::string out;
  std::string err;
};

Output Collective(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int status = RunCollective(args, out, err);
  return {status, out.str(), err.str()};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Keeps NCCL_ALGO / NCCL_PROTO of the test environment out of the way, and restores nothing:
// each test sets what it needs.
class CollectiveCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("NCCL_ALGO");
    unsetenv("NCCL_PROTO");
  }
  void TearDown() override { SetUp(); }
};

// Goldens pin the exact output; after an intended model change, regenerate them with the
// commands in tests/emulator/cli/golden/README.md and review the diff.
TEST_F(CollectiveCommandTest, DgxH100AllReduceMatchesGolden) {
  const auto r = Collective({"scenarios/dgx-h100.toml", "--op", "allreduce"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, ReadFile("tests/emulator/cli/golden/dgx-h100-allreduce.txt"));
}

TEST_F(CollectiveCommandTest, H100x128JsonMatchesGolden) {
  const auto r = Collective({"scenarios/h100-x128.toml", "--op", "allreduce", "-b", "8", "-e", "8G",
                             "-f", "8", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, ReadFile("tests/emulator/cli/golden/h100-x128-allreduce.json"));
}

TEST_F(CollectiveCommandTest, SameInputsGiveIdenticalOutput) {
  const std::vector<std::string> args = {"scenarios/h100-x1024.toml", "--op", "alltoall", "--json"};
  EXPECT_EQ(Collective(args).out, Collective(args).out);
}

TEST_F(CollectiveCommandTest, JsonHasTheDocumentedKeys) {
  const auto r = Collective(
      {"scenarios/dgx-h100.toml", "--op", "allgather", "-b", "1M", "-e", "1M", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* key :
       {"\"size_bytes\": 1048576", "\"count\": 32768", "\"time_us\": ", "\"algbw_gbps\": ",
        "\"busbw_gbps\": ", "\"algorithm\": \"", "\"protocol\": \"", "\"model\": \"analytical\""})
    EXPECT_THAT(r.out, HasSubstr(key));
  EXPECT_EQ(r.out.front(), '[');
}

TEST_F(CollectiveCommandTest, TableLooksLikeNcclTests) {
  const auto r = Collective({"scenarios/dgx-h100.toml", "--op", "reduce", "-b", "1K", "-e", "4K",
                             "--dtype", "bf16", "--redop", "max", "--root", "3"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("#       size        count     type  redop   root"));
  EXPECT_THAT(r.out, HasSubstr("        1024          512 bfloat16    max      3"));
  EXPECT_THAT(r.out, HasSubstr("# Avg bus bandwidth    : "));
  const auto gather =
      Collective({"scenarios/dgx-h100.toml", "--op", "allgather", "-b", "1K", "-e", "1K"});
  EXPECT_THAT(gather.out, HasSubstr("        1024           32    float   none     -1"));
}

TEST_F(CollectiveCommandTest, SizesRoundDownToWholeElementsPerRank) {
  const auto r =
      Collective({"scenarios/dgx-h100.toml", "--op", "alltoall", "-b", "8", "-e", "64", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("\"size_bytes\": 8,")));
  EXPECT_THAT(r.out, HasSubstr("\"size_bytes\": 32, \"count\": 1,"));
  EXPECT_THAT(r.out, HasSubstr("\"size_bytes\": 64, \"count\": 2,"));
}

TEST_F(CollectiveCommandTest, NcclAlgoAndProtoFromTheEnvironment) {
  setenv("NCCL_ALGO", "Ring", 1);
  setenv("NCCL_PROTO", "Simple", 1);
  const auto r = Collective({"scenarios/dgx-h100.toml", "--op", "allreduce", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("NVLS")));
  EXPECT_THAT(r.out, Not(HasSubstr("\"LL")));
  EXPECT_THAT(r.out, HasSubstr("\"algorithm\": \"Ring\", \"protocol\": \"Simple\""));
  // The command line wins over the environment.
  const auto flag = Collective(
      {"scenarios/dgx-h100.toml", "--op", "allreduce", "-b", "8G", "--algo", "nvls", "--json"});
  EXPECT_THAT(flag.out, HasSubstr("\"algorithm\": \"NVLS\""));
  const auto table = Collective({"scenarios/dgx-h100.toml", "--op", "allreduce", "-b", "8G"});
  EXPECT_THAT(table.out, HasSubstr("algorithm: NCCL_ALGO=Ring | protocol: NCCL_PROTO=Simple"));
}

TEST_F(CollectiveCommandTest, NodesAndRanksSelectTheCommunicator) {
  const auto nodes = Collective(
      {"scenarios/h100-x128.toml", "--op", "allreduce", "-b", "1G", "-e", "1G", "--nodes", "2"});
  ASSERT_EQ(nodes.status, 0) << nodes.err;
  EXPECT_THAT(nodes.out, HasSubstr("# nRanks 16 nNodes 2 scale-up domains 2"));
  const auto ranks = Collective(
      {"scenarios/h100-x128.toml", "--op", "allreduce", "-b", "1G", "-e", "1G", "--ranks", "4"});
  EXPECT_THAT(ranks.out, HasSubstr("# nRanks 4 nNodes 1 scale-up domains 1"));
}

TEST_F(CollectiveCommandTest, BadInputIsExitStatusTwoWithOneClearLine) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"scenarios/dgx-h100.toml"}, "error: missing --op"},
      {{"--op", "allreduce"}, "error: missing SCENARIO"},
      {{"scenarios/dgx-h100.toml", "--op", "allsum"}, "unknown collective 'allsum'"},
      {{"scenarios/dgx-h100.toml", "--op", "allreduce", "--algo", "hypercube"},
       "NCCL_ALGO: unknown value 'hypercube'"},
      {{"scenarios/dgx-h100.toml", "--op", "allreduce", "--nodes", "3"},
       "--nodes 3: the cluster has 1 nodes"},
      {{"scenarios/dgx-h100.toml", "--op", "allreduce", "-b", "8 parsecs"}, "-b: "},
      {{"scenarios/dgx-h100.toml", "--op", "allreduce", "-b", "1G", "-e", "1M"},
       "-b is larger than -e"},
      {{"scenarios/dgx-h100.toml", "--op", "allreduce", "--dtype", "fp4"},
       "unknown data type 'fp4'"},
      {{"scenarios/dgx-h100.toml", "--op", "allreduce", "--frobnicate"},
       "unknown option '--frobnicate'"},
      {{"scenarios/no-such-file.toml", "--op", "allreduce"}, "scenarios/no-such-file.toml"},
      {{"scenarios/dgx-h100.toml", "--op", "allreduce", "--algo", "tree"},
       "no allowed algorithm/protocol runs allreduce on 8 ranks"},
  };
  for (const Case& c : cases) {
    const auto r = Collective(c.args);
    EXPECT_EQ(r.status, kExitBadInput) << c.message;
    EXPECT_THAT(r.err, HasSubstr(c.message));
    EXPECT_TRUE(r.out.empty()) << c.message;
  }
}

TEST_F(CollectiveCommandTest, EveryBundledScenarioRunsEveryCollective) {
  int scenarios = 0;
  for (const auto& entry : std::filesystem::directory_iterator("scenarios")) {
    if (entry.path().extension() != ".toml") continue;
    ++scenarios;
    for (int i = 0; i < netmodel::kNumCollectiveOps; ++i) {
      const std::string op(netmodel::ToString(static_cast<netmodel::CollectiveOp>(i)));
      const auto r = Collective(
          {entry.path().string(), "--op", op, "-b", "1K", "-e", "1G", "-f", "32", "--json"});
      EXPECT_EQ(r.status, 0) << entry.path() << " " << op << ": " << r.err;
      EXPECT_THAT(r.out, Not(HasSubstr("\"time_us\": 0.000"))) << entry.path() << " " << op;
    }
  }
  EXPECT_GE(scenarios, 8);
}

TEST_F(CollectiveCommandTest, HelpIsNotAnError) {
  const auto r = Collective({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("usage: myriad collective SCENARIO --op OP"));
}

}  // namespace
}  // namespace myriad::cli
