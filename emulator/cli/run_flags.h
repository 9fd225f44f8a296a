// Flags and outputs shared by the commands that run the engine (`replay`, `run`).
#pragma once

#include <algorithm>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "cli/progress.h"
#include "myriad/emulator/engine.h"
#include "myriad/emulator/gate.h"
#include "myriad/emulator/report.h"
#include "myriad/emulator/scenario.h"

namespace myriad::cli {

struct RunFlags {
  emulator::EngineOptions engine;
  std::string report_path;
  std::string timeline_path;
  std::string html_path;        // --html: the HTML report
  bool fidelity_given = false;  // --fidelity overrides the scenario's [network] fidelity
  bool clocks_given = false;    // --clocks overrides the scenario's [timing] clocks
  bool fp8_given = false;       // --fp8-accumulation overrides [timing] fp8_accumulation
  bool overlap_given = false;   // --overlap, --overlap-slowdown override [timing] overlap
  std::string baseline_path;    // --baseline: gate this run's report against it
  emulator::GateOptions gate;   // --max-regression
  bool json = false;            // --json: the JSON report on stdout in place of the summary
  ProgressMode progress = ProgressMode::kAuto;  // --progress, --quiet
  RunFlags() { engine.timeline_max_ranks = 64; }
  // The engine options of a run on `scenario`: its [network] settings, the command line's
  // fidelity if given, no timeline unless one is written, and progress on `err` if shown.
  emulator::EngineOptions engine_options(const emulator::Scenario& scenario,
                                         std::ostream& err) const {
    emulator::EngineOptions options = engine;
    options.on_progress = MakeProgressDisplay(err, progress);
    // The HTML report's timeline overview needs the slices of a few ranks.
    if (timeline_path.empty())
      options.timeline_max_ranks = html_path.empty() ? 0 : std::min(options.timeline_max_ranks, 8);
    if (!fidelity_given) options.fidelity = scenario.fidelity;
    if (!clocks_given) options.timing.sustained_clocks = scenario.sustained_clocks;
    if (!fp8_given) options.timing.fp8_promotion = scenario.fp8_promotion;
    if (!overlap_given)
      options.overlap =
          scenario.overlap_shared ? emulator::OverlapModel::kShared : emulator::OverlapModel::kOff;
    options.flow = scenario.flow;
    // The command line's profiles first: the first that answers wins.
    options.timing.profile_paths.insert(options.timing.profile_paths.end(),
                                        scenario.profiles.begin(), scenario.profiles.end());
    return options;
  }
};

inline constexpr const char* kRunFlagsUsage =
    "  --report FILE            write the JSON report (docs/report-schema.md)\n"
    "  --json                   print the JSON report instead of the summary (a --baseline\n"
    "                           comparison then goes to stderr)\n"
    "  --timeline FILE          write a Chrome/Perfetto trace of the run\n"
    "  --html FILE              write the HTML report: one self-contained page of charts\n"
    "                           (docs/report-html.md)\n"
    "  --timeline-ranks N       ranks in the timeline, evenly sampled (default 64)\n"
    "  --profile FILE           a kernel profile database (repeatable; also [timing] profiles;\n"
    "                           `myriad profile import` writes them; docs/kernel-timing.md)\n"
    "  --fallback-kernel-us X   duration of kernels nothing else times (default 10)\n"
    "  --no-launch-guess        time kernels no model knows by the fallback, not by a guess\n"
    "                           from their launch (docs/kernel-timing.md)\n"
    "  --launch-latency-us X    host enqueue to earliest device start (default 2)\n"
    "  --api-cost-us X          host time per CUDA/NCCL call (default 0)\n"
    "  --overlap MODEL          shared: communication in flight takes its NCCL channels' SMs\n"
    "                           from tensor-core kernels and its HBM traffic from memory-bound\n"
    "                           ones (default: the scenario's [timing]); off: nothing\n"
    "                           (docs/engine.md)\n"
    "  --overlap-slowdown F     instead, every kernel runs (1 + F) x longer while a collective\n"
    "                           of its rank is in flight (the flat model)\n"
    "  --iteration-marker NAME  markers (trace marker ops, NVTX marks and ranges) that\n"
    "                           delimit iterations: those that begin with NAME (\"Train step\"\n"
    "                           matches \"Train step 3\"), or match it where it has a '*'\n"
    "                           (default \"iteration\")\n"
    "  --fidelity MODEL         the network model: analytical (each collective alone) or flow\n"
    "                           (flows sharing links; default: the scenario's [network])\n"
    "  --clocks MODE            sustained: tensor-core kernels at the clock a long load holds\n"
    "                           under the GPU's power limit (default: the scenario's [timing]);\n"
    "                           boost: at the clock of short benchmarks (docs/kernel-timing.md)\n"
    "  --fp8-accumulation MODE  as-called: FP8 GEMMs accumulate as the program or framework\n"
    "                           asks (cuBLASLt's default promotes to FP32, slower on Hopper);\n"
    "                           fast: all with fast accumulation (default: the scenario's\n"
    "                           [timing])\n"
    "  --log-level LEVEL        trace, debug, info, warn (default), error, off\n"
    "  --progress               show progress on stderr even when it is not a terminal (a\n"
    "                           line every 250 ms; on a terminal one line is rewritten)\n"
    "  --quiet                  no progress display\n"
    "  --max-queued-ops N       ops a stream holds before a launch blocks the host (default\n"
    "                           1024, CUDA's; 0: unbounded; fewer saves memory at scale)\n"
    "  --baseline FILE          compare this run's report with FILE as `myriad gate` does and\n"
    "                           exit 1 if a metric regressed (docs/ci.md)\n"
    "  --max-regression X       with --baseline: how much worse a metric may get (default 2%)\n";

// If args[i] is one of the flags above, consumes it and its value and returns true; a bad
// value sets `error`.
bool ParseRunFlag(const std::vector<std::string>& args, std::size_t& i, RunFlags& flags,
                  std::string& error);

// Prints the summary (the JSON report with --json) and writes the report and timeline; returns
// the exit status.
int FinishRun(const emulator::RunResult& result, const emulator::RunContext& context,
              const RunFlags& flags, std::ostream& out, std::ostream& err);

// With --baseline: gates the run's report against the baseline and prints the table; 0 when
// nothing regressed (or no baseline was given), 1 when something did, 2 on bad input.
int GateAgainstBaseline(const emulator::RunResult& result, const emulator::RunContext& context,
                        const RunFlags& flags, std::ostream& out, std::ostream& err);

// Writes `text` to `path`; on failure says so on `err` and returns false.
bool WriteFile(const std::string& path, const std::string& text, std::ostream& err);
// Reads the whole of `path` (a report, a sweep's plan or result: `what` names it in errors),
// refusing what is not a regular file of at most 1 GiB (a FIFO or /dev/zero would never end).
Status ReadText(const std::string& path, std::string_view what, std::string* text);

// What `myriad gate` writes besides its table.
struct GateOutputs {
  std::string markdown_path;
  std::string benchmark_json_path;
  bool json = false;  // --json: the comparison as JSON in place of the table
};
// Gates `current_json` (named `current_name` in messages) against the report at
// `baseline_path`; prints the table; returns the exit status.
int GateReports(const std::string& baseline_path, const std::string& current_json,
                const std::string& current_name, const emulator::GateOptions& options,
                const GateOutputs& outputs, std::ostream& out, std::ostream& err);

}  // namespace myriad::cli
