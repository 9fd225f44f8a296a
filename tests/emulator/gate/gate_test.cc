// Gating: reports flattened into named metrics, directions, thresholds (command line and
// file), verdicts, the refusal to compare different runs, and the Markdown and
// github-action-benchmark outputs.
#include "myriad/emulator/gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace myriad::emulator {
namespace {

using ::testing::HasSubstr;

std::string Report(double iteration_us, double tokens, double peak_rank1,
                   const std::string& scenario = "s") {
  return R"({"schema_version": 1, "command": "simulate", "scenario": {"name": ")" + scenario +
         R"(", "path": "x.toml"}, "iteration_time_us": )" + std::to_string(iteration_us) +
         R"(, "tokens_per_second": )" + std::to_string(tokens) +
         R"(, "breakdown_us": {"exposed_comm": {"min": 1, "median": 2, "max": 3}},
  "collectives": [{"comm": "dp", "op": "allreduce", "bytes": 64, "calls": 2, "time_us": 5}],
  "ranks": [{"rank": 0, "peak_memory_bytes": 100}, {"rank": 1, "peak_memory_bytes": )" +
         std::to_string(peak_rank1) + "}]}";
}

FlatReport Flat(const std::string& json) {
  auto r = FlattenReport(json, "test.json");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(r).value();
}

const Comparison& Row(const GateResult& r, const std::string& metric) {
  for (const Comparison& c : r.rows)
    if (c.metric == metric) return c;
  ADD_FAILURE() << "no row " << metric;
  static Comparison none;
  return none;
}

TEST(GateTest, FlattenNamesMetricsByTheirPath) {
  const FlatReport f = Flat(Report(100, 1000, 200));
  EXPECT_EQ(f.scenario, "s");
  EXPECT_EQ(f.command, "simulate");
  std::vector<std::string> names;
  for (const Metric& m : f.metrics) names.push_back(m.name);
  EXPECT_THAT(names, ::testing::Contains("breakdown_us.exposed_comm.max"));
  EXPECT_THAT(names, ::testing::Contains("collectives[dp allreduce 64].time_us"));
  EXPECT_THAT(names, ::testing::Contains("ranks[1].peak_memory_bytes"));
  // `myriad collective --json` rows are named by op and size.
  const FlatReport c = Flat(
      R"([{"op": "allreduce", "size_bytes": 8, "time_us": 15.0, "busbw_gbps": 0.001, "scenario": "d.toml"}])");
  EXPECT_EQ(c.command, "collective");
  EXPECT_EQ(c.scenario, "d.toml");
  std::vector<std::string> rows;
  for (const Metric& m : c.metrics) rows.push_back(m.name);
  EXPECT_THAT(rows, ::testing::Contains("[allreduce 8].time_us"));
  // Anonymous-namespace kernels: nvcc's build-path hash is not part of the name.
  const FlatReport k1 = Flat(
      R"({"uncovered_kernels": [{"name": "_ZN45_GLOBAL__N__e21fd584_12_x_cu_b629b5ec4stepEv", "count": 3}]})");
  const FlatReport k2 = Flat(
      R"({"uncovered_kernels": [{"name": "_ZN45_GLOBAL__N__3b67d945_12_x_cu_b629b5ec4stepEv", "count": 3}]})");
  EXPECT_EQ(k1.metrics[0].name, k2.metrics[0].name);
  EXPECT_EQ(k1.metrics[0].name,
            "uncovered_kernels[_ZN45_GLOBAL__N___12_x_cu_b629b5ec4stepEv].count");
  EXPECT_FALSE(FlattenReport("{not json", "bad.json").ok());
  EXPECT_EQ(FlattenReport("{not json", "bad.json").status().message(),
            "bad.json: not a JSON report (docs/report-schema.md)");
}

// A document nested deeper than any report is refused before it is parsed (100,000 levels
// exhausted the stack); strings holding brackets do not count.
TEST(GateTest, ADocumentNestedDeeperThanAReportIsRefused) {
  const std::string deep = std::string(100000, '[') + "1" + std::string(100000, ']');
  const auto r = FlattenReport(deep, "deep.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "deep.json: not a JSON report: nested deeper than 64 levels (docs/report-schema.md)");
  EXPECT_TRUE(FlattenReport(R"({"total_time_us": 1, "notes": ["[[[[{{{{\"[["]})", "x.json").ok());
}

TEST(GateTest, DirectionsAndVerdicts) {
  EXPECT_EQ(DefaultDirection("tokens_per_second"), Better::kHigher);
  EXPECT_EQ(DefaultDirection("[allreduce 8].busbw_gbps"), Better::kHigher);
  EXPECT_EQ(DefaultDirection("iteration_time_us"), Better::kLower);
  GateOptions options;  // 2%
  // 1% slower, 3% fewer tokens, rank 1's peak 50% higher.
  auto r = Compare(Flat(Report(100, 1000, 200)), Flat(Report(101, 970, 300)), options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Row(*r, "iteration_time_us").verdict, Comparison::kWorse);
  EXPECT_NEAR(Row(*r, "iteration_time_us").change, 0.01, 1e-9);
  EXPECT_EQ(Row(*r, "tokens_per_second").verdict, Comparison::kRegressed);
  EXPECT_EQ(Row(*r, "ranks[1].peak_memory_bytes").verdict, Comparison::kRegressed);
  EXPECT_EQ(Row(*r, "ranks[0].peak_memory_bytes").verdict, Comparison::kSame);
  EXPECT_TRUE(r->failed);
  // Faster and more tokens: better, and nothing fails.
  auto better = Compare(Flat(Report(100, 1000, 200)), Flat(Report(90, 1100, 200)), options);
  ASSERT_TRUE(better.ok());
  EXPECT_EQ(Row(*better, "iteration_time_us").verdict, Comparison::kBetter);
  EXPECT_FALSE(better->failed);
  // Self-gating: any change fails, better or worse.
  options.max_change = 0;
  auto changed = Compare(Flat(Report(100, 1000, 200)), Flat(Report(90, 1000, 200)), options);
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(Row(*changed, "iteration_time_us").verdict, Comparison::kChanged);
  EXPECT_TRUE(changed->failed);
  auto same = Compare(Flat(Report(100, 1000, 200)), Flat(Report(100, 1000, 200)), options);
  EXPECT_FALSE(same->failed);
}

TEST(GateTest, RulesMetricSelectionAndDifferentRuns) {
  GateOptions options;
  options.rules.push_back({"ranks[*].peak_memory_bytes", 0.6, std::nullopt});
  options.rules.push_back({"tokens_per_second", 0.05, std::nullopt});
  auto r = Compare(Flat(Report(100, 1000, 200)), Flat(Report(101, 970, 300)), options);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->failed);
  options.metrics = {"iteration_time_us"};
  r = Compare(Flat(Report(100, 1000, 200)), Flat(Report(101, 970, 300)), options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->rows.size(), 1u);
  options.metrics = {"no_such_metric*"};
  EXPECT_EQ(Compare(Flat(Report(1, 1, 1)), Flat(Report(1, 1, 1)), options).status().message(),
            "no metric matches 'no_such_metric*' in either report");
  // A --threshold pattern that matches nothing is the same typo.
  GateOptions typo;
  typo.rules.push_back({"iteration_time", 0.05, std::nullopt, /*must_match=*/true});
  EXPECT_EQ(Compare(Flat(Report(1, 1, 1)), Flat(Report(1, 1, 1)), typo).status().message(),
            "--threshold iteration_time=...: no metric matches it in either report");
  GateOptions plain;
  auto different = Compare(Flat(Report(1, 1, 1, "a")), Flat(Report(1, 1, 1, "b")), plain);
  EXPECT_THAT(different.status().message(), HasSubstr("different runs"));
  plain.allow_different_scenario = true;
  EXPECT_TRUE(Compare(Flat(Report(1, 1, 1, "a")), Flat(Report(1, 1, 1, "b")), plain).ok());
}

// The current report must carry the baseline's headline figures as numbers: one that is
// missing, null, a string or a bool fails the gate; a schema_version Myriad does not write is
// refused.
TEST(GateTest, AMissingOrNonNumericHeadlineFailsAndUnknownSchemasAreRefused) {
  const FlatReport base = Flat(R"({"schema_version": 1, "iteration_time_us": 100})");
  for (const char* current : {R"({"schema_version": 1, "iteration_time_us": null, "x": 1})",
                              R"({"schema_version": 1, "iteration_time_us": "100", "x": 1})",
                              R"({"schema_version": 1, "iteration_time_us": true, "x": 1})",
                              R"({"schema_version": 1, "x": 1})"}) {
    auto r = Compare(base, Flat(current), GateOptions());
    ASSERT_TRUE(r.ok()) << current;
    EXPECT_TRUE(r->failed) << current;
    EXPECT_EQ(Row(*r, "iteration_time_us").verdict, Comparison::kMissing) << current;
  }
  const auto future = FlattenReport(R"({"schema_version": 2, "iteration_time_us": 1})", "f.json");
  ASSERT_FALSE(future.ok());
  EXPECT_EQ(future.status().message(),
            "f.json: report schema_version 2 is not one this Myriad reads (1; "
            "docs/report-schema.md)");
}

TEST(GateTest, ThresholdsFile) {
  const auto dir = std::filesystem::temp_directory_path() / "myriad_gate_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "thresholds.toml").string();
  std::ofstream(path) << "max_regression = \"1%\"\n[metric.\"mfu\"]\nmax_regression = \"0.5%\"\n"
                         "[metric.\"custom_score\"]\nbetter = \"higher\"\n";
  GateOptions options;
  ASSERT_TRUE(LoadThresholds(path, &options).ok());
  EXPECT_DOUBLE_EQ(options.max_regression, 0.01);
  ASSERT_EQ(options.rules.size(), 2u);
  EXPECT_DOUBLE_EQ(*options.rules[0].max_regression, 0.005);
  EXPECT_EQ(*options.rules[1].better, Better::kHigher);
  std::ofstream(path) << "[metric.\"mfu\"]\nbetter = \"up\"\n";
  GateOptions bad;
  EXPECT_THAT(
      LoadThresholds(path, &bad).message(),
      HasSubstr("thresholds.toml:2:10: metric.mfu.better: must be \"higher\" or \"lower\""));
  EXPECT_DOUBLE_EQ(ParseFraction("2%").value(), 0.02);
  EXPECT_DOUBLE_EQ(ParseFraction("0.5").value(), 0.5);
  EXPECT_FALSE(ParseFraction("two").ok());
}

TEST(GateTest, TableMarkdownAndBenchmarkJson) {
  auto r = Compare(Flat(Report(100, 1000, 200)), Flat(Report(101, 970, 300)), GateOptions{});
  ASSERT_TRUE(r.ok());
  const std::string table = FormatGateTable(*r);
  EXPECT_THAT(table, HasSubstr("tokens_per_second"));
  EXPECT_THAT(table, HasSubstr("-3.00%"));
  EXPECT_THAT(table, HasSubstr("REGRESSED (higher better, limit 2.00%)"));
  EXPECT_THAT(table, HasSubstr("FAILED:"));
  const std::string md = FormatGateMarkdown(*r, "title");
  EXPECT_THAT(md, HasSubstr("### :x: title"));
  EXPECT_THAT(md, HasSubstr("| `tokens_per_second` | 1000.000 | 970.000 | -3.00% | REGRESSED |"));
  const std::string bench = BenchmarkActionJson(*r);
  EXPECT_THAT(bench,
              HasSubstr("{\"name\": \"iteration_time_us\", \"unit\": \"us\", \"value\": 101.0}"));
  EXPECT_THAT(bench, ::testing::Not(HasSubstr("tokens_per_second")));
}

}  // namespace
}  // namespace myriad::emulator
