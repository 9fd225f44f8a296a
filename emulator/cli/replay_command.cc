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
#include "cli/run_flags.h"
#include "myriad/emulator/engine.h"
#include "myriad/emulator/report.h"
#include "myriad/emulator/scenario.h"
#include "myriad/emulator/trace.h"

namespace myriad::cli {
namespace {

const std::string kReplayUsage =
    std::string(
        "usage: myriad replay TRACE --scenario SCENARIO [options]\n"
        "\n"
        "Runs the per-rank op streams of TRACE (JSON Lines or binary, docs/trace-format.md) on "
        "the\n"
        "scenario's cluster in virtual time, and prints the predicted iteration time, per-rank\n"
        "compute / exposed communication / idle time, peak memory and kernel timing coverage.\n"
        "\n"
        "  --scenario FILE          the cluster (required)\n") +
    kRunFlagsUsage;

constexpr const char* kTraceUsage =
    "usage: myriad trace convert IN OUT\n"
    "\n"
    "Converts a trace: OUT ending in .jsonl is written as JSON Lines, anything else as the\n"
    "binary format (docs/trace-format.md).\n";

}  // namespace

int RunReplay(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto usage_error = [&](const std::string& msg) {
    err << "myriad replay: error: " << msg << "\n" << kReplayUsage;
    return kExitBadInput;
  };
  std::string trace_path, scenario_path;
  RunFlags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string flag_error;
    if (ParseRunFlag(args, i, flags, flag_error)) {
      if (!flag_error.empty()) return usage_error(flag_error);
      continue;
    }
    if (a == "--help" || a == "-h") {
      out << kReplayUsage;
      return kExitOk;
    } else if (a == "--scenario") {
      if (i + 1 >= args.size()) return usage_error("--scenario needs a file");
      scenario_path = args[++i];
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
  const emulator::EngineOptions options = flags.engine_options(*scenario, err);
  auto result = emulator::RunEngine(**workload, scenario->cluster, options);
  if (!result.ok()) {
    err << "myriad: error: " << result.status().message() << "\n";
    return kExitFailure;
  }
  emulator::RunContext context{"replay",
                               scenario->name,
                               scenario_path,
                               (*workload)->description(),
                               std::string(netmodel::ToString(options.fidelity)),
                               &scenario->cluster,
                               {},
                               {},
                               {}};
  const int status = FinishRun(*result, context, flags, out, err);
  return status != kExitOk
             ? status
             : GateAgainstBaseline(*result, context, flags, flags.json ? err : out, err);
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
