// The example programs, unmodified, under `myriad run` (issue 4's acceptance): the collective
// benchmark prints what `myriad collective` predicts, however the GPUs are spread over
// processes and threads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "tests/support/run_command.h"

namespace {

using ::testing::HasSubstr;

// size -> busbw from nccl-tests-style rows (an optional "[rank 0] " prefix is skipped).
std::map<long long, double> BusBandwidths(const std::string& output, bool only_rank0) {
  std::map<long long, double> rows;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("[rank ", 0) == 0) {
      if (only_rank0 && line.rfind("[rank 0] ", 0) != 0) continue;
      line = line.substr(line.find(']') + 1);
    }
    std::istringstream fields(line);
    long long size = 0, count = 0;
    std::string type, redop, root;
    double time = 0, algbw = 0, busbw = 0;
    if (fields >> size >> count >> type >> redop >> root >> time >> algbw >> busbw)
      rows[size] = busbw;
  }
  return rows;
}

void ExpectMatchesCollective(const std::string& run_args, const std::string& scenario) {
  const auto [status, out] = myriad::testing::RunCommand(std::string(MYRIAD_BINARY) + " run " +
                                                         scenario + " " + run_args + " 2>&1");
  ASSERT_EQ(status, 0) << out;
  const auto [cstatus, predicted] =
      myriad::testing::RunCommand(std::string(MYRIAD_BINARY) + " collective " + scenario +
                                  " --op allreduce -b 1M -e 1G -f 32 2>&1");
  ASSERT_EQ(cstatus, 0) << predicted;
  const auto measured = BusBandwidths(out, true);
  const auto expected = BusBandwidths(predicted, false);
  ASSERT_EQ(expected.size(), 3u) << predicted;
  for (const auto& [size, busbw] : expected) {
    ASSERT_TRUE(measured.count(size)) << size << "\n" << out;
    EXPECT_NEAR(measured.at(size), busbw, 0.02 * busbw) << size;
  }
}

const std::string kBench = MYRIAD_COLLECTIVE_BENCH;
const std::string kBenchArgs = " -b 1M -e 1G -f 32 -w 1 -n 20";

TEST(ExamplesRunTest, CollectiveBenchOneProcessEightGpus) {
  ExpectMatchesCollective(
      "--processes 1 --devices-per-process 8 -- " + kBench + kBenchArgs + " -g 8",
      "scenarios/dgx-h100.toml");
}

TEST(ExamplesRunTest, CollectiveBench128GpusAs16ProcessesOf8) {
  ExpectMatchesCollective(
      "--processes 16 --devices-per-process 8 -- " + kBench + kBenchArgs + " -g 8",
      "scenarios/h100-x16.toml");
}

TEST(ExamplesRunTest, CollectiveBench128GpusAs128Processes) {
  ExpectMatchesCollective("--processes 128 --devices-per-process 1 -- " + kBench + kBenchArgs,
                          "scenarios/h100-x16.toml");
}

}  // namespace
