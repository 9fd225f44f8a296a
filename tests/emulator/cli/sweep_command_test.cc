// `myriad sweep` end to end, on the binary: a local run, resuming, bad axes, and the Slurm path
// (the array script, each task's `sweep point`, `sweep collect`) giving the local results.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/support/run_command.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kSweep = "tests/emulator/cli/data/sweep-small.toml";

std::pair<int, std::string> Myriad(const std::string& args) {
  return myriad::testing::RunCommand(std::string(MYRIAD_BINARY) + " " + args + " 2>&1");
}

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path FreshDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  return dir;
}

TEST(SweepCommandTest, RunsEveryPointReportsTheImpossibleAndResumes) {
  const fs::path dir = FreshDir("sweep-local");
  const auto [status, out] =
      Myriad(std::string("sweep ") + kSweep + " --jobs 2 --out " + dir.string());
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("18 points, 10 to run (2 at a time)"));
  EXPECT_THAT(out,
              HasSubstr("18 points: 8 ok, 6 impossible, 2 out of memory, 2 excluded, 0 failed"));
  EXPECT_THAT(out, HasSubstr("best by highest tokens_per_second: point 7 (tp=2, pp=1, "
                             "micro_batch=2, recompute=full)"));
  const nlohmann::json results = nlohmann::json::parse(Read(dir / "results.json"));
  ASSERT_EQ(results["points"].size(), 18u);
  EXPECT_EQ(results["best"]["index"], 7);
  EXPECT_EQ(results["points"][4]["status"], "impossible");
  EXPECT_EQ(results["points"][4]["reason"],
            "points/0004/point.toml:5:1: workload: layers (32) is not divisible by "
            "parallel.pp (3)");
  EXPECT_EQ(results["points"][0]["status"], "excluded");
  // An ok point's report is the simulate report of its scenario, whose figures it holds.
  const nlohmann::json report = nlohmann::json::parse(Read(dir / "points/0007/report.json"));
  EXPECT_EQ(report["tokens_per_second"], results["points"][7]["metrics"]["tokens_per_second"]);
  for (const char* file : {"results.csv", "results.md", "results.html"})
    EXPECT_TRUE(fs::exists(dir / file)) << file;

  // Again: every point is done, nothing runs, the results are the same bytes.
  const std::string before = Read(dir / "results.json");
  const auto again = Myriad(std::string("sweep ") + kSweep + " --out " + dir.string());
  EXPECT_EQ(again.first, 0);
  EXPECT_THAT(again.second, HasSubstr("18 points, 0 to run"));
  EXPECT_EQ(Read(dir / "results.json"), before);
}

TEST(SweepCommandTest, AnAxisThatIsNoScenarioKeyIsBadInput) {
  const fs::path dir = FreshDir("sweep-typo");
  const fs::path sweep = fs::path(::testing::TempDir()) / "typo-sweep.toml";
  std::ofstream(sweep) << "base = \"" << fs::absolute("scenarios/llama3-8b-h100-x64.toml").string()
                       << "\"\n[axes]\n\"workload.paralel.tp\" = [1, 2]\n";
  const auto [status, out] = Myriad("sweep " + sweep.string() + " --out " + dir.string());
  EXPECT_EQ(status, 2);
  EXPECT_THAT(out, HasSubstr("an axis is not a scenario key"));
  EXPECT_THAT(out, HasSubstr("unknown key (did you mean 'parallel'?)"));

  // A base without a workload has nothing to simulate: the sweep says so before anything runs.
  std::ofstream(sweep) << "base = \"" << fs::absolute("scenarios/h100-x16.toml").string()
                       << "\"\n[axes]\n\"cluster.nodes\" = [1, 2]\n";
  const auto [no_workload, message] = Myriad("sweep " + sweep.string() + " --out " + dir.string());
  EXPECT_EQ(no_workload, 2);
  EXPECT_THAT(message, HasSubstr("has no [workload]"));

  // A key that moved (routing belongs to the fabric now): every point fails alike, so the
  // sweep does, naming the scenario loader's reason.
  std::ofstream(sweep) << "base = \"" << fs::absolute("scenarios/llama3-8b-h100-x64.toml").string()
                       << "\"\n[axes]\n\"network.routing\" = [\"ecmp\", \"adaptive\"]\n";
  const auto [moved, why] = Myriad("sweep " + sweep.string() + " --out " + dir.string());
  EXPECT_EQ(moved, 2);
  EXPECT_THAT(why, HasSubstr("every point is rejected for the same reason"));
  EXPECT_THAT(why, HasSubstr("set cluster.scale_out.routing"));
}

TEST(SweepCommandTest, SlurmTasksAndCollectGiveTheLocalResults) {
  const fs::path local = FreshDir("sweep-compare-local");
  const fs::path slurm = FreshDir("sweep-compare-slurm");
  ASSERT_EQ(Myriad(std::string("sweep ") + kSweep + " --out " + local.string()).first, 0);
  const auto prepared =
      Myriad(std::string("sweep ") + kSweep + " --slurm --jobs 4 --out " + slurm.string());
  ASSERT_EQ(prepared.first, 0) << prepared.second;
  EXPECT_THAT(prepared.second, HasSubstr("submit: sbatch "));
  const std::string script = Read(slurm / "sweep.sbatch");
  EXPECT_THAT(script, HasSubstr("#SBATCH --array=0-17%4\n"));
  EXPECT_THAT(script, HasSubstr(" sweep point " + fs::absolute(slurm).lexically_normal().string() +
                                " \"$SLURM_ARRAY_TASK_ID\"\n"));
  // Before any task ran, collect says what is missing.
  const auto early = Myriad("sweep collect " + slurm.string());
  EXPECT_EQ(early.first, 1);
  EXPECT_THAT(early.second, HasSubstr("10 point(s) have no result yet"));
  // What each array task does, here one after the other.
  for (int task = 0; task < 18; ++task)
    ASSERT_EQ(Myriad("sweep point " + slurm.string() + " " + std::to_string(task)).first, 0)
        << task;
  const auto collected = Myriad("sweep collect " + slurm.string());
  ASSERT_EQ(collected.first, 0) << collected.second;
  EXPECT_EQ(Read(slurm / "results.json"), Read(local / "results.json"));
  EXPECT_EQ(Myriad("sweep point " + slurm.string() + " 18").first, 2);
}

}  // namespace
