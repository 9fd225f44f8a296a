// Performance gating: two reports (`myriad replay/run/simulate --report`, or `myriad
// collective --json`) compared metric by metric against per-metric thresholds, with a verdict
// per metric and overall; what `myriad gate` and `--baseline` print (docs/ci.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "myriad/status.h"

namespace myriad::emulator {

// One numeric value of a report, named by its path: "iteration_time_us",
// "breakdown_us.exposed_comm.max", "ranks[3].peak_memory_bytes",
// "collectives[dp.t0.p0 allreduce 109056000].time_us", "[allreduce 8388608].busbw_gbps" (an
// array element is named by its identifying keys: rank, comm/op/bytes, op/size_bytes,
// provider or name; else by its index).
struct Metric {
  std::string name;
  double value = 0;
};

// A report's metrics, and what it was a run of (for refusing to compare different runs).
struct FlatReport {
  std::string scenario;  // the scenario's name (or path), "" when the report names none
  std::string command;   // "simulate", "replay", "run", "collective"
  std::vector<Metric> metrics;
};

// Parses report JSON; the error names `path` and what is wrong.
Result<FlatReport> FlattenReport(const std::string& json, const std::string& path);

enum class Better { kLower, kHigher };
// Throughput-like metrics (tokens_per_second, model_tflops_per_gpu, mfu, algbw/busbw) are
// better higher; everything else (times, memory, exposed communication) lower.
Better DefaultDirection(const std::string& metric);

// A threshold for the metrics matching `pattern` ('*' matches any run of characters).
struct MetricRule {
  std::string pattern;
  std::optional<double> max_regression;  // fraction: 0.02 is 2%
  std::optional<Better> better;
  // Given on the command line (--threshold): one that matches no metric of either report is
  // an error, as a --metric that matches nothing is (a thresholds file may carry rules for
  // other kinds of report).
  bool must_match = false;
};

struct GateOptions {
  double max_regression = 0.02;
  // Fails on any change beyond this fraction either way (self-gating: a shifted prediction
  // must be re-baselined on purpose); unset: only regressions fail.
  std::optional<double> max_change;
  std::vector<MetricRule> rules;  // later rules win
  // Metric patterns to compare; empty: the headline metrics (DefaultMetricPatterns()).
  std::vector<std::string> metrics;
  bool allow_different_scenario = false;
};

// Iteration time, throughput, TFLOP/s, MFU, bubble, exposed communication, peak memory per
// rank and planned memory, and each collective's time and bandwidth.
const std::vector<std::string>& DefaultMetricPatterns();

// Reads a thresholds file (TOML: `max_regression = "2%"`, and per metric
// `[metric."PATTERN"]` with `max_regression` and `better = "higher" | "lower"`), on top of
// `options`. Errors are "FILE:LINE:COLUMN: KEY: message".
Status LoadThresholds(const std::string& path, GateOptions* options);
// "2%", "0.5%", or a plain fraction "0.02".
Result<double> ParseFraction(const std::string& text);

struct Comparison {
  std::string metric;
  std::optional<double> baseline, current;  // absent: not in that report
  double change = 0;                        // (current - baseline) / |baseline|
  Better better = Better::kLower;
  double threshold = 0;
  enum Verdict { kSame, kBetter, kWorse, kRegressed, kChanged, kMissing, kNew } verdict = kSame;
};

struct GateResult {
  std::vector<Comparison> rows;
  bool failed = false;  // a regression (or, with max_change, any change) beyond its threshold
  int compared = 0;
};

// Compares `current` with `baseline`. Fails (bad input) when they are runs of different
// scenarios or commands (unless allowed) or when a requested metric matches nothing.
Result<GateResult> Compare(const FlatReport& baseline, const FlatReport& current,
                           const GateOptions& options);

std::string VerdictName(Comparison::Verdict verdict);
// The table `myriad gate` prints: metric, baseline, current, change, verdict; unchanged rows
// after the first `max_same` are counted, not listed.
std::string FormatGateTable(const GateResult& result, int max_same = 20);
// A Markdown summary for a pull-request comment.
std::string FormatGateMarkdown(const GateResult& result, const std::string& title);
// github-action-benchmark's `customSmallerIsBetter` input: [{"name", "unit", "value"}] of the
// current report's compared metrics (higher-is-better ones negated is not its convention, so
// only lower-is-better metrics are written).
std::string BenchmarkActionJson(const GateResult& result);
// `myriad gate --json`: every compared row (metric, baseline, current, change, better,
// threshold, verdict) and whether the gate failed.
std::string GateJson(const GateResult& result, const std::string& baseline_name,
                     const std::string& current_name);

}  // namespace myriad::emulator
