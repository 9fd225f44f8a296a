// `myriad run --check-fold`: the smallest fold that can show a difference (two replicas) run
// both ways, in this process, and compared rank by rank.
#include "cli/fold_check.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "myriad/emulator/trace.h"
#include "timing/kernel_names.h"

namespace myriad::cli {
namespace {

namespace fs = std::filesystem;

std::string Shape(const emulator::Dim3& d) { return fmt::format("{}x{}x{}", d.x, d.y, d.z); }

// An op as a person finds it in the program: its kind and what it names.
std::string Describe(const emulator::Op& op, const emulator::NameTable& names) {
  using emulator::OpKind;
  switch (op.kind) {
    case OpKind::kKernel:
      return fmt::format("kernel {} grid {} block {}",
                         emulator::timing::DemangleKernelName(names.Name(op.name)), Shape(op.grid),
                         Shape(op.block));
    case OpKind::kCollective:
      return fmt::format("{} of {} {}", netmodel::ToString(op.coll), op.count,
                         emulator::ToString(op.dtype));
    case OpKind::kMarker:
      return fmt::format("marker \"{}\"", names.Name(op.label));
    case OpKind::kMemcpy:
      return fmt::format("memcpy {} of {} bytes", emulator::ToString(op.copy_kind), op.bytes);
    case OpKind::kMemset:
    case OpKind::kMalloc:
    case OpKind::kFree:
      return fmt::format("{} of {} bytes", emulator::ToString(op.kind), op.bytes);
    default:
      return std::string(emulator::ToString(op.kind));
  }
}

// The first difference in the work two ops do, or "" when they do the same: what a mirror
// replaying `b` would get wrong about `a`.
std::string WorkDifference(const emulator::Op& a, const emulator::NameTable& names,
                           const emulator::Op& b, int b_rank) {
  using emulator::OpKind;
  const auto differs = [b_rank](std::string_view what, const auto& x, const auto& y) {
    return fmt::format("{} {} where rank {} has {}", what, x, b_rank, y);
  };
  if (a.kind != b.kind)
    return differs("kind", emulator::ToString(a.kind), emulator::ToString(b.kind));
  switch (a.kind) {
    case OpKind::kKernel:
      if (a.name != b.name) return differs("kernel", names.Name(a.name), names.Name(b.name));
      if (!(a.grid == b.grid)) return differs("grid", Shape(a.grid), Shape(b.grid));
      if (!(a.block == b.block)) return differs("block", Shape(a.block), Shape(b.block));
      if (a.shared_mem != b.shared_mem) return differs("shared memory", a.shared_mem, b.shared_mem);
      if (a.gemm.m != b.gemm.m || a.gemm.n != b.gemm.n || a.gemm.k != b.gemm.k ||
          a.gemm.batch != b.gemm.batch || a.gemm.dtype != b.gemm.dtype ||
          a.gemm.fast_accumulation != b.gemm.fast_accumulation)
        return differs("GEMM (m, n, k, batch)",
                       fmt::format("({}, {}, {}, {})", a.gemm.m, a.gemm.n, a.gemm.k, a.gemm.batch),
                       fmt::format("({}, {}, {}, {})", b.gemm.m, b.gemm.n, b.gemm.k, b.gemm.batch));
      if (a.attention.batch != b.attention.batch || a.attention.heads != b.attention.heads ||
          a.attention.seq_q != b.attention.seq_q || a.attention.seq_kv != b.attention.seq_kv ||
          a.attention.head_dim != b.attention.head_dim || a.attention.causal != b.attention.causal)
        return fmt::format("attention shape differs from rank {}'s", b_rank);
      if (a.bytes != b.bytes) return differs("bytes", a.bytes, b.bytes);
      if (!(a.counts == b.counts))
        return differs(
            "counted work (instructions, FLOPs)",
            fmt::format("({}, {})", a.counts.instructions,
                        a.counts.fma_flops + a.counts.tensor_flops + a.counts.fp64_flops),
            fmt::format("({}, {})", b.counts.instructions,
                        b.counts.fma_flops + b.counts.tensor_flops + b.counts.fp64_flops));
      if (a.duration != b.duration)
        return differs("recorded duration (ps)", a.duration, b.duration);
      return "";
    case OpKind::kMemcpy:
    case OpKind::kMemset:
    case OpKind::kMalloc:
    case OpKind::kFree:
      if (a.bytes != b.bytes) return differs("bytes", a.bytes, b.bytes);
      if (a.kind == OpKind::kMemcpy && a.copy_kind != b.copy_kind)
        return differs("direction", emulator::ToString(a.copy_kind),
                       emulator::ToString(b.copy_kind));
      return "";
    case OpKind::kCollective:
    case OpKind::kSend:
    case OpKind::kRecv:
      if (a.coll != b.coll)
        return differs("collective", netmodel::ToString(a.coll), netmodel::ToString(b.coll));
      if (a.count != b.count) return differs("element count", a.count, b.count);
      if (a.dtype != b.dtype)
        return differs("data type", emulator::ToString(a.dtype), emulator::ToString(b.dtype));
      if (a.root != b.root) return differs("root", a.root, b.root);
      return "";
    case OpKind::kMarker:
      if (a.label != b.label) return differs("label", names.Name(a.label), names.Name(b.label));
      return "";
    default:
      return "";
  }
}

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
    // The unfolded run's ops, to find the first one a mirror would replay wrongly.
    args.insert(args.end(), {"--no-fold", "--record", (dir / "unfolded.mtrace").string()});
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

Result<std::optional<std::string>> FirstUnlikeOp(emulator::Workload& workload, int live_ranks,
                                                 int ranks) {
  const int world = std::min(ranks, workload.world_size());
  if (live_ranks <= 0) return Status::InvalidArgument("fold check: no live ranks");
  for (int r = live_ranks; r < world; ++r) {
    const int source = r % live_ranks;
    auto mine = workload.OpenRank(r);
    if (!mine.ok()) return mine.status();
    auto theirs = workload.OpenRank(source);
    if (!theirs.ok()) return theirs.status();
    emulator::Op a, b;
    for (std::uint64_t index = 0;; ++index) {
      auto more_a = (*mine)->Next(a);
      if (!more_a.ok()) return more_a.status();
      auto more_b = (*theirs)->Next(b);
      if (!more_b.ok()) return more_b.status();
      if (!*more_a && !*more_b) break;
      if (*more_a != *more_b) {
        const emulator::Op& last = *more_a ? a : b;
        return std::optional<std::string>(fmt::format(
            "rank {} has {} ops where rank {} has more: op {} ({}) is the first only rank {} "
            "has",
            *more_a ? source : r, index, *more_a ? r : source, index,
            Describe(last, workload.names()), *more_a ? r : source));
      }
      if (a.kind != b.kind || (a.kind == emulator::OpKind::kKernel && a.name != b.name))
        return std::optional<std::string>(fmt::format("rank {}'s op {} is {} where rank {}'s is {}",
                                                      r, index, Describe(a, workload.names()),
                                                      source, Describe(b, workload.names())));
      const std::string difference = WorkDifference(a, workload.names(), b, source);
      if (!difference.empty())
        return std::optional<std::string>(fmt::format("rank {}'s op {} ({}): {}", r, index,
                                                      Describe(a, workload.names()), difference));
    }
  }
  return std::optional<std::string>();
}

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
  // Ops first: they name what differs in the program's terms (a kernel, a size), where the
  // figures below can only say which total moved.
  if (auto trace = emulator::OpenTrace((dir / "unfolded.mtrace").string()); trace.ok()) {
    auto unlike = FirstUnlikeOp(**trace, run.live_ranks, world);
    if (!unlike.ok()) return unlike.status();
    if (unlike->has_value())
      return Status::InvalidArgument(fmt::format(
          "fold check failed: as two data-parallel replicas (mesh {}), the replicas do not "
          "launch the same work: {}; a mirror replays its source's ops, so a folded run would "
          "mispredict; run it unfolded (docs/run.md, \"Folding\"; outputs in {})",
          run.mesh_of_two, **unlike, dir.string()));
  } else {
    return Status::Internal(fmt::format("fold check: cannot read the unfolded run's ops: {}",
                                        trace.status().message()));
  }
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
