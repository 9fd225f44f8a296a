// What a run produced, for people and programs: the stdout summary, the JSON report
// (docs/report-schema.md) and the Chrome/Perfetto timeline.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "myriad/emulator/engine.h"
#include "myriad/netmodel/cluster.h"
#include "myriad/status.h"

namespace myriad::emulator {

struct RunContext {
  std::string command;  // "replay"
  std::string scenario_name;
  std::string scenario_path;
  std::string workload;  // Workload::description()
  std::string fidelity = "analytical";
  const netmodel::Cluster* cluster = nullptr;
  // More top-level report members from the command (name -> JSON value, in order), e.g.
  // `myriad simulate`'s model_tflops_per_gpu.
  std::vector<std::pair<std::string, std::string>> extra;
  // A run that ended badly: what caused it (the first thing that went wrong), its exit
  // status, and what followed. The figures are then those of what ran until it ended.
  struct Failure {
    std::string cause;
    int exit_status = 1;
    std::vector<std::string> consequences;
  };
  std::optional<Failure> failure;
  // What the reader must know about the figures (one line each), e.g. that values computed on
  // the GPU read back as zeros: the summary's last lines, the report's "notes".
  std::vector<std::string> notes;
};

std::string FormatSummary(const RunResult& result, const RunContext& context);
// The JSON report: stable key order, fixed number formatting, byte-identical for equal runs.
std::string ReportJson(const RunResult& result, const RunContext& context);
// The Chrome trace-event JSON (loads in Perfetto and chrome://tracing).
std::string TimelineJson(const RunResult& result, const RunContext& context);

}  // namespace myriad::emulator
