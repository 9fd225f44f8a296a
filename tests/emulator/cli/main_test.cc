// The `myriad` binary's own words: --version, help COMMAND, unknown commands.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli/progress.h"
#include "tests/support/run_command.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::pair<int, std::string> Myriad(const std::string& args) {
  return myriad::testing::RunCommand(std::string(MYRIAD_BINARY) + " " + args + " 2>&1");
}

TEST(MainTest, VersionNamesTheReleaseAndTheNcclItModels) {
  for (const char* flag : {"--version", "version"}) {
    const auto [status, out] = Myriad(flag);
    EXPECT_EQ(status, 0);
    EXPECT_THAT(out, StartsWith("myriad 0."));
    EXPECT_THAT(out, HasSubstr("NCCL 2.28.9"));
  }
}

TEST(MainTest, HelpCommandPrintsThatCommandsUsage) {
  for (const char* command : {"check", "collective", "run", "replay", "simulate", "gate"}) {
    const auto [status, out] = Myriad(std::string("help ") + command);
    EXPECT_EQ(status, 0) << command;
    EXPECT_THAT(out, StartsWith(std::string("usage: myriad ") + command)) << command;
  }
}

TEST(MainTest, HelpOfAnUnknownCommandIsAnErrorNamingIt) {
  const auto [status, out] = Myriad("help frobnicate");
  EXPECT_EQ(status, 2);
  EXPECT_THAT(out, StartsWith("myriad help: error: unknown command 'frobnicate'"));
  EXPECT_EQ(Myriad("help").first, 0);
  EXPECT_EQ(Myriad("frobnicate").first, 2);
}

}  // namespace

namespace {

// Every command that prints figures prints them as one JSON document with --json.
nlohmann::json JsonOf(const std::string& args) {
  const auto [status, out] =
      myriad::testing::RunCommand(std::string(MYRIAD_BINARY) + " " + args + " 2>/dev/null");
  EXPECT_EQ(status, 0) << args;
  return nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
}

TEST(MainTest, EveryCommandThatPrintsFiguresPrintsJsonWithJson) {
  const nlohmann::json check = JsonOf("check scenarios/h100-x128.toml --json");
  ASSERT_TRUE(check.is_object());
  EXPECT_EQ(check["sections"][0]["title"], "scenario");

  const nlohmann::json collective =
      JsonOf("collective scenarios/dgx-h100.toml --op allreduce -b 1M -e 1M --json");
  ASSERT_TRUE(collective.is_array());  // one row per size, as nccl-tests prints them
  EXPECT_EQ(collective[0]["op"], "allreduce");

  const nlohmann::json simulate = JsonOf("simulate scenarios/llama3-8b-h100-x64.toml --json");
  ASSERT_TRUE(simulate.is_object());
  EXPECT_GT(simulate["tokens_per_second"].get<double>(), 0);

  const nlohmann::json replay = JsonOf(
      "replay tests/emulator/cli/data/overlap.jsonl --scenario scenarios/dgx-h100.toml --json");
  ASSERT_TRUE(replay.is_object());
  EXPECT_EQ(replay["command"], "replay");

  const std::string report = ::testing::TempDir() + "/main_test_report.json";
  JsonOf("simulate scenarios/llama3-8b-h100-x64.toml --report " + report);
  const nlohmann::json gate =
      JsonOf("gate --baseline " + report + " --current " + report + " --json");
  ASSERT_TRUE(gate.is_object());
  EXPECT_EQ(gate["failed"], false);
  EXPECT_EQ(gate["rows"][0]["verdict"], "same");
}

}  // namespace

namespace {

TEST(ProgressTest, ShownWhenAskedForNeverWhenQuietAndNotByDefaultOffATerminal) {
  const std::string run = std::string(MYRIAD_BINARY) +
                          " simulate scenarios/llama3-8b-h100-x64.toml --no-fold --report "
                          "/dev/null ";
  const auto forced = myriad::testing::RunCommand(run + "--progress 2>&1 >/dev/null");
  EXPECT_EQ(forced.first, 0);
  // The last update: every rank finished, the clock at the end of the run.
  EXPECT_THAT(forced.second, HasSubstr("| ranks 0 live, 64 finished (done)\n"));
  EXPECT_THAT(forced.second, HasSubstr("myriad: progress: virtual time "));
  EXPECT_EQ(myriad::testing::RunCommand(run + "--progress --quiet 2>&1 >/dev/null").second, "");
  EXPECT_EQ(myriad::testing::RunCommand(run + "2>&1 >/dev/null").second,
            "");  // stderr is a pipe here
}

TEST(ProgressTest, EstimatesTheTimeLeftFromTheShareOfKnownOpsDone) {
  myriad::emulator::Progress p;
  p.virtual_time = myriad::emulator::FromMicros(1500);
  p.ops = 250'000;
  p.expected_ops = 1'000'000;
  p.ranks = 8;
  p.finished = 2;
  p.wall_seconds = 10;
  EXPECT_EQ(myriad::cli::FormatProgress(p),
            "virtual time 1.5 ms | 250.0 Kops simulated, 25.0 Kops/s | ranks 6 live, 2 finished "
            "| ETA 30 s");
  p.expected_ops = 0;  // unknown: no estimate
  EXPECT_THAT(myriad::cli::FormatProgress(p), Not(HasSubstr("ETA")));
}

}  // namespace
