// Predictions for the reference rows, shared by the accuracy tests and the program that writes
// docs/validation.md, so the document shows exactly what the tests check.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "myriad/emulator/scenario.h"
#include "myriad/netmodel/collective.h"
#include "tests/emulator/cli/reference_figures.h"

namespace myriad::reference {

inline Result<netmodel::CollectiveEstimate> Predict(const Row& row) {
  auto scenario = emulator::LoadScenario(row.scenario);
  if (!scenario.ok()) return scenario.status();
  auto op = netmodel::ParseCollectiveOp(row.op);
  if (!op.ok()) return op.status();
  netmodel::CollectiveRequest request;
  request.op = *op;
  request.bytes = row.bytes;
  request.ranks = row.ranks;
  if (*row.algo) {
    auto algorithms = netmodel::ParseNcclAlgo(row.algo);
    if (!algorithms.ok()) return algorithms.status();
    request.algorithms = *algorithms;
  }
  return netmodel::CollectiveModel(scenario->cluster).Estimate(request);
}

inline std::string SizeLabel(std::uint64_t bytes) {
  if (bytes >= kGiB && bytes % kGiB == 0) return fmt::format("{} GiB", bytes / kGiB);
  if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
  if (bytes >= kKiB && bytes % kKiB == 0) return fmt::format("{} KiB", bytes / kKiB);
  return fmt::format("{} B", bytes);
}

inline std::string Deviation(double predicted, double published) {
  if (published <= 0) return "";
  return fmt::format("{:+.1f}%", (predicted - published) / published * 100);
}

// The body of docs/validation.md's table: one line per reference row.
inline std::string ValidationTable() {
  std::string out =
      "| source | scenario | op | ranks | NCCL_ALGO | size | published time (us) | predicted "
      "time (us) | dev. | published busbw (GB/s) | predicted busbw (GB/s) | dev. | predicted "
      "algorithm |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Row& row : CollectiveRows()) {
    auto e = Predict(row);
    if (!e.ok()) {
      out += fmt::format("| {} | error: {} |\n", row.source, e.status().message());
      continue;
    }
    out += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {:.1f} | {} | {} | {:.1f} | {} | {}/{} |\n",
        row.source, row.scenario, row.op, row.ranks, *row.algo ? row.algo : "auto",
        SizeLabel(row.bytes), row.time_us > 0 ? fmt::format("{:g}", row.time_us) : "–", e->time_us,
        Deviation(e->time_us, row.time_us),
        row.busbw_gbps > 0 ? fmt::format("{:g}", row.busbw_gbps) : "–", e->busbw_gbps,
        Deviation(e->busbw_gbps, row.busbw_gbps), netmodel::ToString(e->algorithm),
        netmodel::ToString(e->protocol));
  }
  return out;
}

}  // namespace myriad::reference
