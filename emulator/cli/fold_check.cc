// `myriad run --check-fold`: the smallest fold that can show a difference (two replicas) run
// both ways, in this process, and compared rank by rank.
#include "cli/fold_check.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"

namespace myriad::cli {
namespace {

namespace fs = std::filesystem;

// One check run: its report, or why it failed.
Result<nlohmann::json> RunOnce(const FoldCheckRun& run, bool folded, const fs::path& dir) {
  const std::string name = folded ? "folded" : "unfolded";
  const fs::path report = dir / (name + ".json");
  const fs::path output = dir / (name + ".log");
  std::vector<std::string> args = {run.scenario_path,
                                   "--processes",
                                   std::to_string(2 * run.live_ranks / run.devices_per_process),
                                   "--devices-per-process",
                                   std::to_string(run.devices_per_process),
                                   "--env",
                                   run.env,
                                   "--mesh",
                                   run.mesh_of_two,
                                   "--report",
                                   report.string(),
                                   "--program-output",
                                   output.string(),
                                   "--no-check-fold"};
  if (folded) {
    args.insert(args.end(), {"--fold", "dp"});
  } else {
    args.emplace_back("--no-fold");
  }
  if (!run.shim_dir.empty()) args.insert(args.end(), {"--shim-dir", run.shim_dir});
  if (run.timeout_seconds > 0)
    args.insert(args.end(), {"--timeout", fmt::format("{}", run.timeout_seconds)});
  args.emplace_back("--");
  args.insert(args.end(), run.command.begin(), run.command.end());
  std::ostringstream out, err;
  const int status = RunRun(args, out, err);
  if (status != kExitOk) {
    std::string first = err.str();
    first = first.substr(0, first.find('\n'));
    return Status::Internal(fmt::format(
        "fold check: the {} run of two replicas (mesh {}) failed with status {}: {} (its "
        "output: {})",
        name, run.mesh_of_two, status, first, output.string()));
  }
  std::ifstream in(report);
  nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  if (json.is_discarded() || !json.contains("ranks"))
    return Status::Internal(
        fmt::format("fold check: cannot read the {} run's report {}", name, report.string()));
  return json;
}

}  // namespace

Result<std::string> CheckFold(const FoldCheckRun& run) {
  std::string pattern = (fs::temp_directory_path() / "myriad-fold-check-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return Status::Internal(
        fmt::format("fold check: cannot make a folder in {}", fs::temp_directory_path().string()));
  const fs::path dir = pattern;
  auto unfolded = RunOnce(run, false, dir);
  if (!unfolded.ok()) return unfolded.status();
  auto folded = RunOnce(run, true, dir);
  if (!folded.ok()) return folded.status();
  const int world = 2 * run.live_ranks;
  const nlohmann::json& whole = (*unfolded)["ranks"];
  const nlohmann::json& mirrored = (*folded)["ranks"];
  if (static_cast<int>(whole.size()) != world || static_cast<int>(mirrored.size()) != world)
    return Status::InvalidArgument(fmt::format(
        "fold check failed: as two data-parallel replicas (mesh {}) the program ran {} ranks "
        "as processes and {} folded, not {} (its output: {})",
        run.mesh_of_two, whole.size(), mirrored.size(), world, (dir / "unfolded.log").string()));
  // The replica that ran as processes in both runs comes first: a difference there means the
  // program does not repeat itself, which the check cannot tell from unlike replicas.
  for (int r = 0; r < world; ++r) {
    const nlohmann::json& a = whole[static_cast<std::size_t>(r)];
    const nlohmann::json& b = mirrored[static_cast<std::size_t>(r)];
    for (const auto& [key, value] : a.items()) {
      if (b.contains(key) && b[key] == value) continue;
      const std::string as_folded = b.contains(key) ? b[key].dump() : "nothing";
      if (r < run.live_ranks)
        return Status::InvalidArgument(fmt::format(
            "fold check failed: as two data-parallel replicas (mesh {}), rank {}, a process in "
            "both runs, had {} = {} in one and {} in the other: the program does not do the "
            "same work twice, so no fold of it can be checked (outputs in {})",
            run.mesh_of_two, r, key, value.dump(), as_folded, dir.string()));
      return Status::InvalidArgument(fmt::format(
          "fold check failed: as two data-parallel replicas (mesh {}), rank {} had {} = {} as "
          "a process but {} as a mirror of rank {}: the replicas do not do alike work (work "
          "that depends on the data-parallel rank, such as rank 0 alone saving a checkpoint, "
          "is replayed by every mirror), so a folded run would mispredict; run it unfolded "
          "(docs/run.md, \"Folding\"; outputs in {})",
          run.mesh_of_two, r, key, value.dump(), as_folded, r % run.live_ranks, dir.string()));
    }
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return fmt::format(
      "fold check: as two data-parallel replicas (mesh {}, {} ranks), the run with the second "
      "replica mirrored gave every rank the figures the run with both as processes did",
      run.mesh_of_two, world);
}

}  // namespace myriad::cli
