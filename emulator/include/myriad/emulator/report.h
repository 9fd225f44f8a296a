// What a run produced, for people and programs: the stdout summary, the JSON report
// (docs/report-schema.md) and the Chrome/Perfetto timeline.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

// Collectives that repeat across communicators of one family (the name up to its first '.':
// "dp.t3.p0" is "dp"), one op, size, algorithm and protocol, as one entry: what the summary
// prints. Times are means per call, weighted by calls; in first-seen order.
struct CollectiveGroup {
  std::string family;
  netmodel::CollectiveOp op = netmodel::CollectiveOp::kAllReduce;
  std::uint64_t bytes = 0;
  netmodel::Algorithm algorithm = netmodel::Algorithm::kRing;
  netmodel::Protocol protocol = netmodel::Protocol::kSimple;
  int communicators = 0;
  std::uint64_t calls = 0;
  double alone_us = 0;  // the analytical time of one call
  double mean_us = 0;   // flow fidelity: with the traffic around it
};
// `collectives` as RunResult holds them: each (communicator, op, size) once.
std::vector<CollectiveGroup> GroupCollectives(const std::vector<CollectiveStats>& collectives);
// A communicator's family: its name up to the first '.' ("dp.t3.p0" is "dp"), the parallel axis
// of a synthetic workload's communicators.
std::string CommunicatorFamily(std::string_view comm);

std::string FormatSummary(const RunResult& result, const RunContext& context);
// The JSON report: stable key order, fixed number formatting, byte-identical for equal runs.
std::string ReportJson(const RunResult& result, const RunContext& context);
// The HTML report: one self-contained page (inline SVG and CSS) with where the time goes, a
// timeline overview, communication per family, memory against HBM, kernel-timing coverage and,
// under the flow model, the busiest links (docs/report-html.md).
std::string ReportHtml(const RunResult& result, const RunContext& context);
// The Chrome trace-event JSON (loads in Perfetto and chrome://tracing).
std::string TimelineJson(const RunResult& result, const RunContext& context);

}  // namespace myriad::emulator
