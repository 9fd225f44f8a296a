// Sweep files, their grid, constraints, point outcomes and the result tables.
#include "myriad/emulator/sweep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace myriad::emulator {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string WriteSweep(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

SweepValue Int(double v) { return {SweepValue::Kind::kInteger, v, {}}; }
SweepValue Str(std::string s) { return {SweepValue::Kind::kString, 0, std::move(s)}; }

TEST(LoadSweepTest, ExpandsTheGridWithTheLastAxisFastestAndZipsTogether) {
  const std::string path = WriteSweep("grid.toml", R"(
base = "base.toml"
[axes]
"workload.parallel.tp" = [1, 2]
"workload.training.recompute" = ["selective", "full"]
[[zip]]
"cluster.nodes" = [4, 8, 16]
"workload.training.global_batch" = [128, 256, 512]
)");
  Result<SweepPlan> plan = LoadSweep(path);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->points.size(), 2u * 2 * 3);
  EXPECT_EQ(plan->axes,
            (std::vector<std::string>{"workload.parallel.tp", "workload.training.recompute",
                                      "cluster.nodes", "workload.training.global_batch"}));
  EXPECT_EQ(plan->base_path,
            (std::filesystem::path(::testing::TempDir()) / "base.toml").lexically_normal());
  const SweepPoint& p1 = plan->points[1];
  EXPECT_EQ(p1.settings[0].second, Int(1));
  EXPECT_EQ(p1.settings[1].second, Str("selective"));
  EXPECT_EQ(p1.settings[2].second, Int(8));  // the zip moves first
  EXPECT_EQ(p1.settings[3].second, Int(256));
  const SweepPoint& last = plan->points.back();
  EXPECT_EQ(last.settings[0].second, Int(2));
  EXPECT_EQ(last.settings[1].second, Str("full"));
  EXPECT_EQ(last.settings[2].second, Int(16));
  EXPECT_EQ(SettingsText(last), "tp=2, recompute=full, nodes=16, global_batch=512");
  EXPECT_EQ(plan->objective.metric, "tokens_per_second");
  EXPECT_TRUE(plan->objective.maximize);
}

TEST(LoadSweepTest, ConstraintsExcludePointsAndSayWhich) {
  const std::string path = WriteSweep("constrained.toml", R"(
base = "base.toml"
objective = "iteration_time_us"
constraints = ["workload.parallel.tp * workload.parallel.pp <= 8"]
[axes]
"workload.parallel.tp" = [1, 2, 4, 8]
"workload.parallel.pp" = [1, 2, 4, 8]
)");
  Result<SweepPlan> plan = LoadSweep(path);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  int excluded = 0;
  for (const SweepPoint& p : plan->points)
    if (p.status == PointStatus::kExcluded) {
      ++excluded;
      EXPECT_EQ(p.reason, "constraint: workload.parallel.tp * workload.parallel.pp <= 8");
    }
  EXPECT_EQ(excluded, 6);  // 2x8, 4x4, 4x8, 8x2, 8x4, 8x8
  EXPECT_FALSE(plan->objective.maximize);
}

TEST(LoadSweepTest, BadSweepFilesAreOneLineErrorsNamingTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[axes]\n\"a.b\" = [1]\n", "missing required key"},
      {"base = \"b.toml\"\n", "axes: missing required key"},
      {"base = \"b.toml\"\n[axes]\n\"workload.parallel.tp\" = []\n", "must be a non-empty list"},
      {"base = \"b.toml\"\n[axes]\n\"workload.parallel.tp\" = [[1]]\n",
       "axis values must be numbers, strings or booleans"},
      {"base = \"b.toml\"\n[axes]\n\"a\" = [1]\n[[zip]]\n\"a\" = [2]\n", "is swept twice"},
      {"base = \"b.toml\"\n[[zip]]\n\"a\" = [1, 2]\n\"b\" = [1]\n", "vary together"},
      {"base = \"b.toml\"\n[axes]\n\"name\" = [\"x\"]\n", "the sweep sets this itself"},
      {"base = \"b.toml\"\nobjective = \"speed\"\n[axes]\n\"a\" = [1]\n", "unknown objective"},
      {"base = \"b.toml\"\nconstraints = [\"a <\"]\n[axes]\n\"a\" = [1]\n", "expected a value"},
      {"base = \"b.toml\"\nconstraints = [\"b < 2\"]\n[axes]\n\"a\" = [1]\n", "'b' is not an axis"},
      {"base = \"b.toml\"\nbases = 1\n", "unknown key"},
  };
  for (const auto& [text, expected] : cases) {
    Result<SweepPlan> plan = LoadSweep(WriteSweep("bad.toml", text));
    ASSERT_FALSE(plan.ok()) << text;
    EXPECT_THAT(plan.status().message(), HasSubstr(expected)) << text;
    EXPECT_THAT(plan.status().message(), StartsWith(::testing::TempDir() + "/bad.toml")) << text;
    EXPECT_EQ(plan.status().message().find('\n'), std::string::npos) << text;
  }
}

TEST(ConstraintTest, ArithmeticComparisonsAndStrings) {
  const std::vector<std::pair<std::string, SweepValue>> s = {
      {"workload.parallel.tp", Int(4)}, {"cluster.nodes", Int(8)}, {"r", Str("ecmp")}};
  auto eval = [&](const std::string& c) {
    Result<bool> r = EvaluateConstraint(c, s);
    EXPECT_TRUE(r.ok()) << c << ": " << r.status().message();
    return r.ok() && *r;
  };
  EXPECT_TRUE(eval("workload.parallel.tp * 2 == cluster.nodes"));
  EXPECT_TRUE(eval("(cluster.nodes - workload.parallel.tp) / 2 >= 2"));
  EXPECT_TRUE(eval("cluster.nodes % 3 != 0"));
  EXPECT_TRUE(eval("-workload.parallel.tp < 0"));
  EXPECT_FALSE(eval("workload.parallel.tp > 4"));
  EXPECT_TRUE(eval("r == \"ecmp\""));
  EXPECT_TRUE(eval("r != \"adaptive\""));
  for (const char* bad :
       {"r < 1", "r + 1 == 2", "cluster.nodes / 0 > 1", "1 == 1 2", "(1 < 2", "r < \"a\""})
    EXPECT_FALSE(EvaluateConstraint(bad, s).ok()) << bad;
}

TEST(SweepValueTest, TomlTextReadsBackAsTheSameValue) {
  EXPECT_EQ(Int(8).Toml(), "8");
  EXPECT_EQ((SweepValue{SweepValue::Kind::kFloat, 2, {}}).Toml(), "2.0");
  EXPECT_EQ((SweepValue{SweepValue::Kind::kFloat, 0.1, {}}).Toml(), "0.1");
  EXPECT_EQ((SweepValue{SweepValue::Kind::kBoolean, 1, {}}).Toml(), "true");
  EXPECT_EQ(Str("a\"b\\c").Toml(), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Str("ecmp").Display(), "ecmp");
}

TEST(PointScenarioTest, IncludesTheBaseAndSetsEachKey) {
  SweepPlan plan;
  plan.sweep_path = "s.toml";
  plan.base_path = "scenarios/llama3-8b-h100-x64.toml";
  plan.base_name = "llama3-8b-h100-x64";
  SweepPoint point;
  point.index = 3;
  point.settings = {{"workload.parallel.tp", Int(2)}, {"cluster.scale_out.routing", Str("ecmp")}};
  const std::string toml = PointScenarioToml(plan, point, "s.sweep/points/0003");
  EXPECT_THAT(toml, HasSubstr("include = \"../../../scenarios/llama3-8b-h100-x64.toml\"\n"));
  EXPECT_THAT(toml, HasSubstr("name = \"llama3-8b-h100-x64\"\n"));
  EXPECT_THAT(toml,
              HasSubstr("\nworkload.parallel.tp = 2\ncluster.scale_out.routing = \"ecmp\"\n"));
}

TEST(ClassifyTest, ExitStatusesAndMessagesSayWhatBecameOfAPoint) {
  SweepPoint p;
  ClassifyPointRun(0, "", R"({"tokens_per_second": 12.5, "memory_per_gpu_bytes": {"total": 7},
                             "ranks": [{"rank": 0}]})",
                   &p);
  EXPECT_EQ(p.status, PointStatus::kOk);
  EXPECT_EQ(p.metrics.at("tokens_per_second"), 12.5);
  EXPECT_EQ(p.metrics.at("memory_per_gpu_bytes.total"), 7);
  EXPECT_EQ(p.metrics.count("ranks"), 0u);

  ClassifyPointRun(2, "myriad: error: x.toml:5:1: workload: not divisible\n", "", &p);
  EXPECT_EQ(p.status, PointStatus::kImpossible);
  EXPECT_EQ(p.reason, "x.toml:5:1: workload: not divisible");
  EXPECT_TRUE(p.metrics.empty());

  ClassifyPointRun(1, "myriad: error: predicted out of memory on rank 0 at 0.000 us: ...\n", "",
                   &p);
  EXPECT_EQ(p.status, PointStatus::kOutOfMemory);

  ClassifyPointRun(70, "myriad: error: internal error: boom\n", "", &p);
  EXPECT_EQ(p.status, PointStatus::kFailed);
  EXPECT_EQ(p.reason, "exit status 70: internal error: boom");

  ClassifyPointRun(0, "", "not json", &p);
  EXPECT_EQ(p.status, PointStatus::kFailed);
}

SweepPlan TwoPointPlan() {
  SweepPlan plan;
  plan.sweep_path = "s.toml";
  plan.base_path = "b.toml";
  plan.axes = {"workload.parallel.tp"};
  for (int i = 0; i < 3; ++i) {
    SweepPoint p;
    p.index = i;
    p.settings = {{"workload.parallel.tp", Int(1 << i)}};
    p.status = PointStatus::kOk;
    p.gpus = 64;
    p.hbm_bytes = 80.0 * (1 << 30);
    p.planned_memory_bytes = 40.0 * (1 << 30) / (1 << i);
    p.metrics["tokens_per_second"] = i == 0 ? 5 : 9;  // a tie between points 1 and 2
    plan.points.push_back(p);
  }
  plan.points[2].status = PointStatus::kOutOfMemory;
  plan.points[2].metrics.clear();
  plan.points[2].reason = "predicted out of memory";
  return plan;
}

TEST(ResultsTest, TheBestPointIsTheObjectivesAmongOkPointsTiesToTheEarlier) {
  SweepPlan plan = TwoPointPlan();
  EXPECT_EQ(BestPoint(plan), 1);
  plan.points[2].status = PointStatus::kOk;
  plan.points[2].metrics["tokens_per_second"] = 9;
  EXPECT_EQ(BestPoint(plan), 1);
  plan.objective.maximize = false;
  EXPECT_EQ(BestPoint(plan), 0);
  for (SweepPoint& p : plan.points) p.status = PointStatus::kImpossible;
  EXPECT_EQ(BestPoint(plan), std::nullopt);
}

TEST(ResultsTest, EveryOutputListsEveryPointAndNamesTheBest) {
  const SweepPlan plan = TwoPointPlan();
  const nlohmann::json results = nlohmann::json::parse(SweepResultsJson(plan));
  EXPECT_EQ(results["points"].size(), 3u);
  EXPECT_EQ(results["best"]["index"], 1);
  EXPECT_EQ(results["counts"]["ok"], 2);
  EXPECT_EQ(results["counts"]["out_of_memory"], 1);
  EXPECT_EQ(results["points"][1]["report"], "points/0001/report.json");
  const std::string csv = SweepResultsCsv(plan);
  EXPECT_THAT(csv, StartsWith("index,workload.parallel.tp,status,gpus,tokens_per_second,"));
  EXPECT_THAT(csv, HasSubstr("\n2,4,out_of_memory,64,,"));
  EXPECT_THAT(SweepResultsMarkdown(plan), HasSubstr("Best: point 1 (tp=2)"));
  const std::string html = SweepResultsHtml(plan);
  EXPECT_THAT(html, HasSubstr("<svg"));
  EXPECT_THAT(html, HasSubstr("HBM 80 GiB"));
  EXPECT_THAT(html, HasSubstr("<tr class=\"best\"><td>1</td>"));
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // nothing fetched
}

TEST(ResultsTest, PlanAndPointResultsReadBackAndOtherSettingsDoNotCount) {
  const SweepPlan plan = TwoPointPlan();
  Result<SweepPlan> back = ParsePlanJson(PlanJson(plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->points.size(), 3u);
  EXPECT_EQ(back->points[2].settings, plan.points[2].settings);
  EXPECT_EQ(back->points[2].planned_memory_bytes, plan.points[2].planned_memory_bytes);
  EXPECT_EQ(back->points[0].status, PointStatus::kPending);  // results live in the points

  SweepPoint fresh = back->points[1];
  ASSERT_TRUE(ReadPointResult(PointResultJson(plan.points[1]), &fresh));
  EXPECT_EQ(fresh.status, PointStatus::kOk);
  EXPECT_EQ(fresh.metrics.at("tokens_per_second"), 9);
  SweepPoint other = back->points[0];  // tp=1: point 1's result (tp=2) is not its own
  EXPECT_FALSE(ReadPointResult(PointResultJson(plan.points[1]), &other));
  EXPECT_FALSE(ParsePlanJson("{}", "plan.json").ok());
}

}  // namespace
}  // namespace myriad::emulator
