// `myriad gate` and `--baseline`, in-process: exit 0 when nothing regressed, 1 when something
// did, 2 on bad input; the Markdown and github-action-benchmark files; a simulate run gated
// against a baseline in one step.
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

std::string Temp(const std::string& name) { return ::testing::TempDir() + "myriad_gate_" + name; }

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Report(double iteration_us, const std::string& scenario = "s") {
  return R"({"command": "replay", "scenario": {"name": ")" + scenario +
         R"("}, "iteration_time_us": )" + std::to_string(iteration_us) +
         R"(, "peak_memory_bytes": {"min": 1, "median": 1, "max": 1}})";
}

int Gate(const std::vector<std::string>& args, std::string* out_text = nullptr,
         std::string* err_text = nullptr) {
  std::ostringstream out, err;
  const int status = RunGate(args, out, err);
  if (out_text) *out_text = out.str();
  if (err_text) *err_text = err.str();
  return status;
}

TEST(GateCommandTest, ExitStatusesAndOutputs) {
  const std::string base = Temp("base.json"), same = Temp("same.json"), slow = Temp("slow.json");
  const std::string other = Temp("other.json");
  Write(base, Report(1000));
  Write(same, Report(1010));  // 1% slower: within the default 2%
  Write(slow, Report(1050));  // 5% slower
  Write(other, Report(1000, "another"));
  std::string out, err;
  EXPECT_EQ(Gate({"--baseline", base, "--current", same}, &out), 0);
  EXPECT_THAT(out, HasSubstr("worse (within threshold)"));
  EXPECT_THAT(out, HasSubstr("passed: 2 metrics compared"));
  const std::string md = Temp("summary.md"), bench = Temp("bench.json");
  EXPECT_EQ(
      Gate({"--baseline", base, "--current", slow, "--markdown", md, "--benchmark-json", bench},
           &out),
      1);
  EXPECT_THAT(out, HasSubstr("REGRESSED"));
  EXPECT_THAT(Read(md),
              HasSubstr("| `iteration_time_us` | 1000.000 | 1050.000 | +5.00% | REGRESSED |"));
  EXPECT_THAT(Read(bench), HasSubstr("\"name\": \"iteration_time_us\", \"unit\": \"us\""));
  EXPECT_EQ(Gate({"--baseline", base, "--current", slow, "--max-regression", "10%"}), 0);
  const std::string thresholds = Temp("thresholds.toml");
  Write(thresholds, "[metric.\"iteration_time_us\"]\nmax_regression = \"6%\"\n");
  EXPECT_EQ(Gate({"--baseline", base, "--current", slow, "--thresholds", thresholds}), 0);
  EXPECT_EQ(Gate({"--baseline", base, "--current", slow, "--threshold", "iteration_*=6%"}), 0);
  EXPECT_EQ(Gate({"--baseline", base, "--current", slow, "--thresholds", thresholds, "--threshold",
                  "iteration_time_us=1%"}),
            1);  // the command line wins over the file
  EXPECT_EQ(Gate({"--baseline", base, "--current", slow, "--threshold", "nothing"}), 2);
  // Bad input: different scenarios, a missing file, a bad threshold, a missing flag.
  EXPECT_EQ(Gate({"--baseline", base, "--current", other}, nullptr, &err), 2);
  EXPECT_THAT(err, HasSubstr("different runs"));
  EXPECT_EQ(Gate({"--baseline", base, "--current", other, "--allow-different-scenario"}), 0);
  EXPECT_EQ(Gate({"--baseline", Temp("nope.json"), "--current", same}, nullptr, &err), 2);
  EXPECT_THAT(err, HasSubstr("cannot read baseline"));
  // /dev/zero never ends: refused before a byte is read.
  EXPECT_EQ(Gate({"--baseline", "/dev/zero", "--current", same}, nullptr, &err), 2);
  EXPECT_THAT(err, HasSubstr("/dev/zero: is not a regular file (a FIFO, device or socket)"));
  EXPECT_EQ(
      Gate({"--baseline", base, "--current", same, "--max-regression", "lots"}, nullptr, &err), 2);
  EXPECT_EQ(Gate({"--current", same}, nullptr, &err), 2);
  EXPECT_THAT(err, HasSubstr("missing --baseline"));
}

// `myriad simulate --baseline`: gated against its own earlier report it passes; against a
// baseline that claimed 10% more throughput it fails with exit 1.
TEST(GateCommandTest, SimulateWithBaseline) {
  const std::string scenario = MYRIAD_SOURCE_DIR "/scenarios/llama3-8b-h100-x64.toml";
  const std::string report = Temp("llama.json");
  std::ostringstream out, err;
  ASSERT_EQ(RunSimulate({scenario, "--report", report}, out, err), 0) << err.str();
  std::ostringstream out2, err2;
  EXPECT_EQ(RunSimulate({scenario, "--baseline", report}, out2, err2), 0) << err2.str();
  EXPECT_THAT(out2.str(), HasSubstr("gate: this run against baseline"));
  std::string text = Read(report);
  const std::string key = "\"tokens_per_second\": ";
  const size_t at = text.find(key) + key.size();
  const size_t end = text.find(',', at);
  const double tokens = std::stod(text.substr(at, end - at));
  text.replace(at, end - at, std::to_string(tokens * 1.1));
  const std::string optimistic = Temp("optimistic.json");
  Write(optimistic, text);
  std::ostringstream out3, err3;
  EXPECT_EQ(RunSimulate({scenario, "--baseline", optimistic, "--max-regression", "5%"}, out3, err3),
            1);
  EXPECT_THAT(out3.str(), HasSubstr("tokens_per_second"));
  EXPECT_THAT(out3.str(), HasSubstr("REGRESSED"));
}

}  // namespace
}  // namespace myriad::cli
