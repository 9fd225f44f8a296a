// `myriad gate --baseline BASE.json --current CURRENT.json`: compares two reports metric by
// metric and exits 1 when one regressed beyond its threshold (docs/ci.md). `--baseline` on
// replay, run and simulate does the same with the run's own report.
#include <fmt/format.h>

#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/run_flags.h"
#include "myriad/emulator/gate.h"

namespace myriad::cli {
namespace {

const char* const kGateUsage =
    "usage: myriad gate --baseline BASE.json --current CURRENT.json [options]\n"
    "\n"
    "Compares two reports (replay, run or simulate --report; collective --json) metric by\n"
    "metric: iteration time, throughput, MFU, exposed communication, peak memory per rank and\n"
    "each collective's time by default. Exit status: 0 nothing regressed beyond its threshold,\n"
    "1 something did, 2 bad input.\n"
    "\n"
    "  --max-regression X        a metric may get this much worse (default 2%; 0.5% or 0.005)\n"
    "  --max-change X            fail on any change beyond X either way (self-gating)\n"
    "  --metric PATTERN          compare these metrics only ('*' wildcard; repeatable)\n"
    "  --threshold PATTERN=X     the threshold of the metrics matching PATTERN (repeatable;\n"
    "                            e.g. peak_memory_bytes.max=0%)\n"
    "  --thresholds FILE         per-metric thresholds and directions (TOML; docs/ci.md)\n"
    "  --allow-different-scenario  compare reports of different scenarios or commands\n"
    "  --markdown FILE           also write a Markdown summary (a pull-request comment)\n"
    "  --json                    print the comparison as JSON instead of the table\n"
    "  --benchmark-json FILE     also write github-action-benchmark input\n"
    "                            (customSmallerIsBetter: name, unit, value)\n";

}  // namespace

int GateReports(const std::string& baseline_path, const std::string& current_json,
                const std::string& current_name, const emulator::GateOptions& options,
                const GateOutputs& outputs, std::ostream& out, std::ostream& err) {
  std::string baseline_json;
  if (Status st = ReadText(baseline_path, "report", &baseline_json); !st.ok()) {
    err << "myriad: error: cannot read baseline: " << st.message() << "\n";
    return kExitBadInput;
  }
  auto baseline = emulator::FlattenReport(baseline_json, baseline_path);
  auto current = emulator::FlattenReport(current_json, current_name);
  for (const auto* r : {&baseline, &current})
    if (!r->ok()) {
      err << "myriad: error: " << r->status().message() << "\n";
      return kExitBadInput;
    }
  auto result = emulator::Compare(*baseline, *current, options);
  if (!result.ok()) {
    err << "myriad: error: " << result.status().message() << "\n";
    return kExitBadInput;
  }
  if (outputs.json) {
    out << emulator::GateJson(*result, baseline_path, current_name);
  } else {
    out << fmt::format("\ngate: {} against baseline {}\n", current_name, baseline_path);
    out << emulator::FormatGateTable(*result);
  }
  if (!outputs.markdown_path.empty() &&
      !WriteFile(outputs.markdown_path,
                 emulator::FormatGateMarkdown(
                     *result, fmt::format("Myriad: {} against {}", current_name, baseline_path)),
                 err))
    return kExitBadInput;
  if (!outputs.benchmark_json_path.empty() &&
      !WriteFile(outputs.benchmark_json_path, emulator::BenchmarkActionJson(*result), err))
    return kExitBadInput;
  return result->failed ? kExitFailure : kExitOk;
}

int RunGate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto usage_error = [&](const std::string& msg) {
    err << "myriad gate: error: " << msg << "\n" << kGateUsage;
    return kExitBadInput;
  };
  std::string baseline_path, current_path, thresholds_path;
  std::optional<double> max_regression, max_change;
  emulator::GateOptions options;
  std::vector<emulator::MetricRule> command_line_rules;
  GateOutputs outputs;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    auto fraction = [&](std::optional<double>* into) -> std::string {
      auto v = value();
      if (!v) return a + " needs a value such as 2%";
      auto f = emulator::ParseFraction(*v);
      if (!f.ok()) return a + ": " + f.status().message();
      *into = *f;
      return "";
    };
    std::string problem;
    if (a == "--help" || a == "-h") {
      out << kGateUsage;
      return kExitOk;
    } else if (a == "--baseline" || a == "--current" || a == "--thresholds" || a == "--markdown" ||
               a == "--benchmark-json" || a == "--metric") {
      auto v = value();
      if (!v) return usage_error(a + " needs a value");
      if (a == "--baseline") baseline_path = *v;
      if (a == "--current") current_path = *v;
      if (a == "--thresholds") thresholds_path = *v;
      if (a == "--markdown") outputs.markdown_path = *v;
      if (a == "--benchmark-json") outputs.benchmark_json_path = *v;
      if (a == "--metric") options.metrics.push_back(*v);
    } else if (a == "--threshold") {
      auto v = value();
      const std::size_t eq = v ? v->rfind('=') : std::string::npos;
      if (!v || eq == std::string::npos || eq == 0)
        return usage_error("--threshold needs PATTERN=X, such as iteration_time_us=1%");
      auto f = emulator::ParseFraction(v->substr(eq + 1));
      if (!f.ok()) return usage_error("--threshold " + *v + ": " + f.status().message());
      command_line_rules.push_back({v->substr(0, eq), *f, std::nullopt, /*must_match=*/true});
    } else if (a == "--max-regression") {
      problem = fraction(&max_regression);
    } else if (a == "--max-change") {
      problem = fraction(&max_change);
    } else if (a == "--json") {
      outputs.json = true;
    } else if (a == "--allow-different-scenario") {
      options.allow_different_scenario = true;
    } else {
      return usage_error("unknown option '" + a + "'");
    }
    if (!problem.empty()) return usage_error(problem);
  }
  if (baseline_path.empty()) return usage_error("missing --baseline");
  if (current_path.empty()) return usage_error("missing --current");
  if (!thresholds_path.empty()) {
    if (Status st = emulator::LoadThresholds(thresholds_path, &options); !st.ok()) {
      err << "myriad: error: " << st.message() << "\n";
      return kExitBadInput;
    }
  }
  // The command line wins over the thresholds file (its rules come after the file's).
  if (max_regression) options.max_regression = *max_regression;
  options.rules.insert(options.rules.end(), command_line_rules.begin(), command_line_rules.end());
  options.max_change = max_change;
  std::string current_json;
  if (Status st = ReadText(current_path, "report", &current_json); !st.ok()) {
    err << "myriad: error: cannot read " << st.message() << "\n";
    return kExitBadInput;
  }
  return GateReports(baseline_path, current_json, current_path, options, outputs, out, err);
}

int GateAgainstBaseline(const emulator::RunResult& result, const emulator::RunContext& context,
                        const RunFlags& flags, std::ostream& out, std::ostream& err) {
  if (flags.baseline_path.empty()) return kExitOk;
  return GateReports(flags.baseline_path, emulator::ReportJson(result, context), "this run",
                     flags.gate, GateOutputs{}, out, err);
}

}  // namespace myriad::cli
