// `myriad replay` and `myriad trace convert`.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "myriad/emulator/engine.h"
#include "myriad/emulator/report.h"
#include "myriad/emulator/scenario.h"
#include "myriad/emulator/trace.h"

namespace myriad::cli {
namespace {

constexpr const char* kReplayUsage =
    "usage: myriad replay TRACE --scenario SCENARIO [options]\n"
    "\n"
    "Runs the per-rank op streams of TRACE (JSON Lines or binary, docs/trace-format.md) on the\n"
    "scenario's cluster in virtual time, and prints the predicted iteration time, per-rank\n"
    "compute / exposed communication / idle time, peak memory and kernel timing coverage.\n"
    "\n"
    "  --scenario FILE          the cluster (required)\n"
    "  --report FILE            write the JSON report (docs/report-schema.md)\n"
    "  --timeline FILE          write a Chrome/Perfetto trace of the run\n"
    "  --timeline-ranks N       ranks in the timeline, evenly sampled (default 64)\n"
    "  --kernel-profile FILE    a kernel profile database (repeatable; docs/kernel-timing.md)\n"
    "  --fallback-kernel-us X   duration of kernels nothing else times (default 10)\n"
    "  --launch-latency-us X    host enqueue to earliest device start (default 2)\n"
    "  --api-cost-us X          host time per CUDA/NCCL call (default 0)\n"
    "  --overlap-slowdown F     kernels run (1 + F) x longer while a collective of the same\n"
    "                           rank is in flight (default 0.1)\n"
    "  --fidelity analytical    the network model (analytical; flow arrives with issue 6)\n"
    "  --log-level LEVEL        trace, debug, info, warn (default), error, off\n";

constexpr const char* kTraceUsage =
    "usage: myriad trace convert IN OUT\n"
    "\n"
    "Converts a trace: OUT ending in .jsonl is written as JSON Lines, anything else as the\n"
    "binary format (docs/trace-format.md).\n";

std::optional<double> ParseNumber(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(v >= 0)) return std::nullopt;
  return v;
}

bool WriteFile(const std::string& path, const std::string& text, std::ostream& err) {
  std::ofstream file(path, std::ios::binary);
  file << text;
  if (!file) {
    err << "myriad: error: cannot write " << path << "\n";
    return false;
  }
  return true;
}

}  // namespace

int RunReplay(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto usage_error = [&](const std::string& msg) {
    err << "myriad replay: error: " << msg << "\n" << kReplayUsage;
    return kExitBadInput;
  };
  std::string trace_path, scenario_path, report_path, timeline_path;
  emulator::EngineOptions options;
  options.timeline_max_ranks = 64;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    auto number = [&](double* into) -> bool {
      auto v = value();
      auto n = v ? ParseNumber(*v) : std::nullopt;
      if (!n) return false;
      *into = *n;
      return true;
    };
    double x = 0;
    if (a == "--help" || a == "-h") {
      out << kReplayUsage;
      return kExitOk;
    } else if (a == "--scenario") {
      auto v = value();
      if (!v) return usage_error("--scenario needs a file");
      scenario_path = *v;
    } else if (a == "--report") {
      auto v = value();
      if (!v) return usage_error("--report needs a file");
      report_path = *v;
    } else if (a == "--timeline") {
      auto v = value();
      if (!v) return usage_error("--timeline needs a file");
      timeline_path = *v;
    } else if (a == "--timeline-ranks") {
      if (!number(&x) || x != static_cast<int>(x))
        return usage_error("--timeline-ranks needs a whole number");
      options.timeline_max_ranks = static_cast<int>(x);
    } else if (a == "--kernel-profile") {
      auto v = value();
      if (!v) return usage_error("--kernel-profile needs a file");
      options.timing.profile_paths.push_back(*v);
    } else if (a == "--fallback-kernel-us") {
      if (!number(&x)) return usage_error("--fallback-kernel-us needs a number >= 0");
      options.timing.fallback_duration = emulator::FromMicros(x);
    } else if (a == "--launch-latency-us") {
      if (!number(&x)) return usage_error("--launch-latency-us needs a number >= 0");
      options.launch_latency = emulator::FromMicros(x);
    } else if (a == "--api-cost-us") {
      if (!number(&x)) return usage_error("--api-cost-us needs a number >= 0");
      options.api_call_cost = emulator::FromMicros(x);
    } else if (a == "--overlap-slowdown") {
      if (!number(&x)) return usage_error("--overlap-slowdown needs a number >= 0");
      options.overlap_slowdown = x;
    } else if (a == "--fidelity") {
      auto v = value();
      if (!v) return usage_error("--fidelity needs a value");
      if (*v != "analytical")
        return usage_error("--fidelity " + *v + " is not supported yet (only analytical)");
    } else if (a == "--log-level") {
      auto v = value();
      static const std::vector<std::string> kLevels = {"trace", "debug", "info",
                                                       "warn",  "error", "off"};
      if (!v || std::find(kLevels.begin(), kLevels.end(), *v) == kLevels.end())
        return usage_error("--log-level needs one of trace, debug, info, warn, error, off");
      options.log_level = *v;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option '" + a + "'");
    } else if (trace_path.empty()) {
      trace_path = a;
    } else {
      return usage_error("unexpected argument '" + a + "'");
    }
  }
  if (trace_path.empty()) return usage_error("missing TRACE");
  if (scenario_path.empty()) return usage_error("missing --scenario");

  auto scenario = emulator::LoadScenario(scenario_path);
  if (!scenario.ok()) {
    err << "myriad: error: " << scenario.status().message() << "\n";
    return kExitBadInput;
  }
  auto workload = emulator::OpenTrace(trace_path);
  if (!workload.ok()) {
    err << "myriad: error: " << workload.status().message() << "\n";
    return kExitBadInput;
  }
  auto result = emulator::RunEngine(**workload, scenario->cluster, options);
  if (!result.ok()) {
    err << "myriad: error: " << result.status().message() << "\n";
    return kExitFailure;
  }
  emulator::RunContext context{"replay",      scenario->name,
                               scenario_path, (*workload)->description(),
                               "analytical",  &scenario->cluster};
  out << emulator::FormatSummary(*result, context);
  if (!report_path.empty() && !WriteFile(report_path, emulator::ReportJson(*result, context), err))
    return kExitFailure;
  if (!timeline_path.empty() &&
      !WriteFile(timeline_path, emulator::TimelineJson(*result, context), err))
    return kExitFailure;
  return kExitOk;
}

int RunTrace(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    out << kTraceUsage;
    return kExitOk;
  }
  if (args.size() != 3 || args[0] != "convert") {
    err << "myriad trace: error: expected `convert IN OUT`\n" << kTraceUsage;
    return kExitBadInput;
  }
  auto workload = emulator::OpenTrace(args[1]);
  if (!workload.ok()) {
    err << "myriad: error: " << workload.status().message() << "\n";
    return kExitBadInput;
  }
  const std::string& target = args[2];
  const bool jsonl = target.size() >= 6 && target.compare(target.size() - 6, 6, ".jsonl") == 0;
  const Status written = jsonl ? emulator::WriteJsonlTrace(**workload, target)
                               : emulator::WriteBinaryTrace(**workload, target);
  if (!written.ok()) {
    err << "myriad: error: " << written.message() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace myriad::cli
