// Every tests/emulator/scenario/malformed/NAME.toml must fail to load with exactly the one-line
// error in NAME.expected. Files under malformed/included/ are only reached through `include`.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "myriad/emulator/scenario.h"
#include "tests/support/run_command.h"

namespace myriad::emulator {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDir = "tests/emulator/scenario/malformed";

// Paths in the expected errors are relative to the repository root.
void EnterSourceDir() { fs::current_path(MYRIAD_SOURCE_DIR); }

std::vector<std::string> CaseNames() {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(fs::path(MYRIAD_SOURCE_DIR) / kDir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".toml") {
      names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadExpected(const std::string& name) {
  std::ifstream in(std::string(kDir) + "/" + name + ".expected");
  std::string line;
  std::getline(in, line);
  return line;
}

class MalformedTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { EnterSourceDir(); }
};

TEST_P(MalformedTest, FailsWithTheExpectedError) {
  const std::string path = std::string(kDir) + "/" + GetParam() + ".toml";
  const std::string expected = ReadExpected(GetParam());
  ASSERT_FALSE(expected.empty()) << "no " << GetParam() << ".expected";
  Result<Scenario> scenario = LoadScenario(path);
  ASSERT_FALSE(scenario.ok()) << path << " loaded";
  EXPECT_EQ(scenario.status().message(), expected);
}

std::string TestName(const ::testing::TestParamInfo<std::string>& param) { return param.param; }

INSTANTIATE_TEST_SUITE_P(Files, MalformedTest, ::testing::ValuesIn(CaseNames()), TestName);

TEST(MalformedCorpusTest, EveryCaseHasAnExpectationAndViceVersa) {
  EnterSourceDir();
  std::set<std::string> tomls, expectations;
  for (const fs::directory_entry& entry : fs::directory_iterator(kDir)) {
    if (!entry.is_regular_file()) continue;
    const std::string stem = entry.path().stem().string();
    if (entry.path().extension() == ".toml") tomls.insert(stem);
    if (entry.path().extension() == ".expected") expectations.insert(stem);
  }
  EXPECT_EQ(tomls, expectations);
  EXPECT_GE(tomls.size(), 15u);
}

TEST(MalformedCorpusTest, ExpectedErrorsAreOneLineInTheDocumentedFormat) {
  EnterSourceDir();
  for (const std::string& name : CaseNames()) {
    std::ifstream in(std::string(kDir) + "/" + name + ".expected");
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    SCOPED_TRACE(name);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
    // FILE:LINE:COLUMN: ..., FILE being a scenario file under tests/.
    EXPECT_EQ(text.rfind("tests/emulator/scenario/malformed/", 0), 0u) << text;
    EXPECT_NE(text.find(".toml:"), std::string::npos) << text;
  }
}

// Runs `command` with stdout discarded; returns its exit status and stderr.
std::pair<int, std::string> RunStderr(const std::string& command) {
  return myriad::testing::RunCommand(command + " 2>&1 >/dev/null");
}

TEST(MyriadCheckTest, ExitsWithStatusTwoAndPrintsTheError) {
  EnterSourceDir();
  for (const char* name : {"unknown_key", "include_error_in_included", "syntax_error"}) {
    SCOPED_TRACE(name);
    const auto [status, output] =
        RunStderr(std::string(MYRIAD_BINARY) + " check " + kDir + "/" + name + ".toml");
    EXPECT_EQ(status, 2);
    EXPECT_EQ(output, "myriad: error: " + ReadExpected(name) + "\n");
  }
}

TEST(MyriadCheckTest, MissingFile) {
  EnterSourceDir();
  const auto [status, output] = RunStderr(std::string(MYRIAD_BINARY) + " check no/such.toml");
  EXPECT_EQ(status, 2);
  EXPECT_EQ(output,
            "myriad: error: no/such.toml: cannot open scenario file: No such file or "
            "directory\n");
}

TEST(MyriadCheckTest, UsageErrors) {
  EnterSourceDir();
  const std::string myriad = MYRIAD_BINARY;
  auto [status, output] = RunStderr(myriad + " check");
  EXPECT_EQ(status, 2);
  EXPECT_EQ(output.rfind("myriad check: error: missing SCENARIO\nusage: myriad check SCENARIO", 0),
            0u)
      << output;
  std::tie(status, output) = RunStderr(myriad + " check --verbose scenarios/dgx-h100.toml");
  EXPECT_EQ(status, 2);
  EXPECT_NE(output.find("unknown option '--verbose'"), std::string::npos) << output;
  std::tie(status, output) = RunStderr(myriad + " check scenarios/dgx-h100.toml extra");
  EXPECT_EQ(status, 2);
  EXPECT_NE(output.find("unexpected argument 'extra'"), std::string::npos) << output;
  std::tie(status, output) = RunStderr(myriad + " check --help");
  EXPECT_EQ(status, 0);
  EXPECT_EQ(output, "");  // usage goes to stdout
}

}  // namespace
}  // namespace myriad::emulator
