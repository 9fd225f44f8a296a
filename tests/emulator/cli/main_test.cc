// The `myriad` binary's own words: --version, help COMMAND, unknown commands.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/support/run_command.h"

namespace {

using ::testing::HasSubstr;
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
