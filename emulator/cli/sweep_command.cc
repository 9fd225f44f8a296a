// `myriad sweep SWEEP.toml`: every point of a grid of scenario variations through `myriad
// simulate`, as child processes (--jobs at a time) or as a Slurm job array (--slurm), then the
// results table with the best point. `myriad sweep collect DIR` merges what the tasks left;
// `myriad sweep point DIR INDEX` runs one point (what each array task does). docs/sweep.md.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <thread>

#include "cli/commands.h"
#include "cli/run_flags.h"
#include "myriad/emulator/scenario.h"
#include "myriad/emulator/sweep.h"

namespace myriad::cli {
namespace fs = std::filesystem;
namespace {

using emulator::PointStatus;
using emulator::SweepPlan;
using emulator::SweepPoint;

const char* const kSweepUsage =
    "usage: myriad sweep SWEEP.toml [options]\n"
    "       myriad sweep collect DIR\n"
    "       myriad sweep point DIR INDEX\n"
    "\n"
    "Runs every point of a grid of variations of one scenario through `myriad simulate` and\n"
    "writes DIR/results.json, results.csv, results.md and results.html with the best point by\n"
    "an objective (docs/sweep.md). Points already done are skipped, so a sweep resumes.\n"
    "Points that cannot be (an indivisible layout, out of memory) are reported as such; the\n"
    "exit status is 1 only if a point's run failed, 2 for bad input.\n"
    "\n"
    "  --out DIR            where the results go (default: SWEEP without .toml, plus .sweep)\n"
    "  --jobs N             points run at once (default: this machine's cores); with --slurm,\n"
    "                       the job array's limit on tasks running at once\n"
    "  --objective METRIC   tokens_per_second (default), mfu, model_tflops_per_gpu,\n"
    "                       iteration_time_us, or max:METRIC / min:METRIC of any report metric\n"
    "  --slurm              write DIR/sweep.sbatch, a Slurm job array of one task per point,\n"
    "                       instead of running; after it ran, `myriad sweep collect DIR`\n"
    "  --json               print results.json instead of the summary\n"
    "\n"
    "collect DIR        merges the points' results in DIR (from Slurm's tasks or a local run)\n"
    "point DIR INDEX    runs point INDEX of the sweep prepared in DIR (one Slurm task)\n";

// A file the sweep left in its folder ("" if it is not there or cannot be read).
std::string ReadOrEmpty(const std::string& path) {
  std::string text;
  return ReadText(path, "sweep file", &text).ok() ? text : std::string();
}

// Written beside and renamed into place, so a reader (collect, a resumed sweep) never sees
// half a file.
bool WriteAtomically(const std::string& path, const std::string& text, std::ostream& err) {
  const std::string temporary = path + ".partial";
  if (!WriteFile(temporary, text, err)) return false;
  std::error_code error;
  fs::rename(temporary, path, error);
  if (error) {
    err << "myriad: error: cannot write " << path << ": " << error.message() << "\n";
    return false;
  }
  return true;
}

std::string SelfPath() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? std::string("myriad") : self.string();
}

std::string PointDir(const std::string& dir, int index) {
  return (fs::path(dir) / emulator::PointFolder(index)).string();
}

// A message about a point's files names them relative to the sweep's folder, so results do not
// depend on where the folder is (a local run and Slurm's tasks give the same results.json).
std::string WithinSweep(std::string text, const std::string& dir) {
  const std::string prefix = (fs::path(dir) / "").string();
  for (std::size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at))
    text.erase(at, prefix.size());
  return text;
}

// Writes each point's scenario and loads it: a point whose scenario the loader rejects cannot
// be; an axis that is no scenario key at all is the sweep's mistake (bad input).
Status Prepare(SweepPlan& plan, const std::string& dir) {
  Result<emulator::Scenario> base = emulator::LoadScenario(plan.base_path);
  if (!base.ok())
    return Status::InvalidArgument(plan.sweep_path + ": base scenario: " + base.status().message());
  if (!base->workload)
    return Status::InvalidArgument(plan.sweep_path + ": base scenario " + plan.base_path +
                                   " has no [workload] (each point is a `myriad simulate` run)");
  plan.base_name = base->name;
  std::error_code error;
  for (SweepPoint& point : plan.points) {
    if (point.status == PointStatus::kExcluded) continue;
    const std::string point_dir = PointDir(dir, point.index);
    fs::create_directories(point_dir, error);
    if (error)
      return Status::InvalidArgument("cannot create " + point_dir + ": " + error.message());
    const std::string scenario_path = point_dir + "/point.toml";
    {
      std::ofstream file(scenario_path, std::ios::binary | std::ios::trunc);
      file << emulator::PointScenarioToml(plan, point, point_dir);
      if (!file.flush()) return Status::InvalidArgument("cannot write " + scenario_path);
    }
    Result<emulator::Scenario> scenario = emulator::LoadScenario(scenario_path);
    if (!scenario.ok()) {
      const std::string& message = scenario.status().message();
      if (message.rfind(scenario_path, 0) == 0 &&
          message.find(": unknown key") != std::string::npos)
        return Status::InvalidArgument(
            fmt::format("{}: an axis is not a scenario key: {}", plan.sweep_path, message));
      point.status = PointStatus::kImpossible;
      point.reason = WithinSweep(message, dir);
      continue;
    }
    point.status = PointStatus::kPending;
    point.reason.clear();
    point.gpus = scenario->cluster.total_gpus();
    point.hbm_bytes = scenario->cluster.gpu.hbm_bytes;
    if (scenario->workload) {
      const emulator::WorkloadSpec& spec = *scenario->workload;
      point.planned_memory_bytes =
          spec.rank_memory(point.gpus, spec.fullest_stage(point.gpus)).peak();
    }
  }
  // Every point rejected for one and the same reason: the swept values do not enter into it,
  // so the sweep file is what is wrong (a key that moved, such as network.routing). Reasons
  // are compared past the point's file name, which differs from point to point.
  const SweepPoint* first = nullptr;
  bool all_same = true;
  int tried = 0;
  auto why = [](const SweepPoint& p) { return p.reason.substr(p.reason.find(':') + 1); };
  for (const SweepPoint& point : plan.points) {
    if (point.status == PointStatus::kExcluded) continue;
    ++tried;
    if (point.status != PointStatus::kImpossible) {
      all_same = false;
      break;
    }
    if (first == nullptr) first = &point;
    if (why(point) != why(*first)) all_same = false;
  }
  if (tried > 1 && all_same && first != nullptr)
    return Status::InvalidArgument(
        fmt::format("{}: every point is rejected for the same reason, so the sweep is at fault: {}",
                    plan.sweep_path, first->reason));
  return Status::Ok();
}

// The point's earlier result, if it has one for its current settings.
bool AlreadyDone(const std::string& dir, SweepPoint* point) {
  const std::string text = ReadOrEmpty(PointDir(dir, point->index) + "/result.json");
  return !text.empty() && emulator::ReadPointResult(text, point);
}

// Starts `myriad simulate` on one point, its output into the point's folder; the child's pid.
pid_t StartPoint(const std::string& dir, int index) {
  const std::string point_dir = PointDir(dir, index);
  const std::string self = SelfPath();
  const std::string scenario = point_dir + "/point.toml";
  const std::string report = point_dir + "/report.json";
  const std::string out = point_dir + "/stdout.txt";
  const std::string err = point_dir + "/stderr.txt";
  std::error_code error;
  fs::remove(report, error);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0 || err_fd < 0 || ::dup2(out_fd, STDOUT_FILENO) < 0 ||
      ::dup2(err_fd, STDERR_FILENO) < 0)
    ::_exit(127);
  const char* argv[] = {self.c_str(),   "simulate", scenario.c_str(), "--report",
                        report.c_str(), "--quiet",  nullptr};
  ::execv(self.c_str(), const_cast<char* const*>(argv));
  ::_exit(127);
}

// Reads what a finished point's run left and writes its result.
bool FinishPoint(const std::string& dir, int wait_status, SweepPoint* point, std::ostream& err) {
  const std::string point_dir = PointDir(dir, point->index);
  const int exit_status =
      WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
  emulator::ClassifyPointRun(exit_status, ReadOrEmpty(point_dir + "/stderr.txt"),
                             ReadOrEmpty(point_dir + "/report.json"), point);
  point->reason = WithinSweep(point->reason, dir);
  return WriteAtomically(point_dir + "/result.json", emulator::PointResultJson(*point), err);
}

// A point that does not run still gets a result file, so collect counts it.
bool RecordWithoutRunning(const std::string& dir, const SweepPoint& point, std::ostream& err) {
  if (point.status == PointStatus::kExcluded) return true;  // nothing of it on disk
  return WriteAtomically(PointDir(dir, point.index) + "/result.json",
                         emulator::PointResultJson(point), err);
}

void PrintPoint(const SweepPlan& plan, const SweepPoint& p, std::ostream& out) {
  std::string what(emulator::ToString(p.status));
  if (p.status == PointStatus::kOk && p.metrics.count(plan.objective.metric))
    what += fmt::format(", {} {}", plan.objective.metric, p.metrics.at(plan.objective.metric));
  else if (!p.reason.empty())
    what += ": " + p.reason;
  out << fmt::format("  point {:>4} of {} ({}): {}\n", p.index, plan.points.size(),
                     emulator::SettingsText(p), what);
}

// Reads each point's result into the plan, writes the result files and prints the summary.
int WriteResults(SweepPlan& plan, const std::string& dir, bool json, std::ostream& out,
                 std::ostream& err) {
  // Points without an outcome yet (collect's, from plan.json) take theirs from the folder.
  for (SweepPoint& point : plan.points)
    if (point.status == PointStatus::kPending) AlreadyDone(dir, &point);
  const std::string results = emulator::SweepResultsJson(plan);
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"results.json", results},
           {"results.csv", emulator::SweepResultsCsv(plan)},
           {"results.md", emulator::SweepResultsMarkdown(plan)},
           {"results.html", emulator::SweepResultsHtml(plan)}})
    if (!WriteAtomically((fs::path(dir) / name).string(), text, err)) return kExitFailure;
  std::map<PointStatus, int> counts;
  for (const SweepPoint& p : plan.points) ++counts[p.status];
  if (json) {
    out << results;
  } else {
    out << fmt::format(
        "\nsweep {}: {} points: {} ok, {} impossible, {} out of memory, {} "
        "excluded, {} failed, {} without a result\n",
        plan.sweep_path, plan.points.size(), counts[PointStatus::kOk],
        counts[PointStatus::kImpossible], counts[PointStatus::kOutOfMemory],
        counts[PointStatus::kExcluded], counts[PointStatus::kFailed],
        counts[PointStatus::kPending]);
    if (const std::optional<int> best = emulator::BestPoint(plan)) {
      const SweepPoint& p = plan.points[static_cast<std::size_t>(*best)];
      out << fmt::format("best by {} {}: point {} ({}): {}\n",
                         plan.objective.maximize ? "highest" : "lowest", plan.objective.metric,
                         p.index, emulator::SettingsText(p), p.metrics.at(plan.objective.metric));
    } else if (counts[PointStatus::kOk] > 0) {
      out << fmt::format("best: none (no ok point's report has the metric '{}')\n",
                         plan.objective.metric);
    } else {
      out << "best: none (no point ran to completion)\n";
    }
    out << fmt::format(
        "results: {0}/results.json, {0}/results.csv, {0}/results.md, "
        "{0}/results.html\n",
        dir);
  }
  if (counts[PointStatus::kFailed] > 0) {
    err << fmt::format("myriad sweep: {} point(s) failed; each one's stderr is in {}/points/\n",
                       counts[PointStatus::kFailed], dir);
    return kExitFailure;
  }
  if (counts[PointStatus::kPending] > 0) {
    err << fmt::format("myriad sweep: {} point(s) have no result yet in {}\n",
                       counts[PointStatus::kPending], dir);
    return kExitFailure;
  }
  return kExitOk;
}

Result<SweepPlan> ReadPlan(const std::string& dir) {
  const std::string path = (fs::path(dir) / "plan.json").string();
  const std::string text = ReadOrEmpty(path);
  if (text.empty())
    return Status::NotFound(path + ": no sweep prepared here (myriad sweep SWEEP.toml --out " +
                            dir + " prepares one)");
  return emulator::ParsePlanJson(text, path);
}

int RunPointCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.size() != 3) {
    err << "myriad sweep point: error: needs DIR INDEX\n" << kSweepUsage;
    return kExitBadInput;
  }
  const std::string& dir = args[1];
  Result<SweepPlan> plan = ReadPlan(dir);
  if (!plan.ok()) {
    err << "myriad: error: " << plan.status().message() << "\n";
    return kExitBadInput;
  }
  char* end = nullptr;
  const long index = std::strtol(args[2].c_str(), &end, 10);
  if (args[2].empty() || *end != '\0' || index < 0 ||
      index >= static_cast<long>(plan->points.size())) {
    err << fmt::format("myriad sweep point: error: point '{}' is not one of 0-{}\n", args[2],
                       plan->points.size() - 1);
    return kExitBadInput;
  }
  SweepPlan prepared = std::move(plan).value();
  SweepPoint& point = prepared.points[static_cast<std::size_t>(index)];
  if (point.status == PointStatus::kPending && !AlreadyDone(dir, &point)) {
    const pid_t pid = StartPoint(dir, point.index);
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid) {
      err << "myriad: error: cannot start point " << index << ": " << std::strerror(errno) << "\n";
      return kExitFailure;
    }
    if (!FinishPoint(dir, status, &point, err)) return kExitFailure;
  } else if (!RecordWithoutRunning(dir, point, err)) {
    return kExitFailure;
  }
  PrintPoint(prepared, point, out);
  return point.status == PointStatus::kFailed ? kExitFailure : kExitOk;
}

int RunCollectCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.size() < 2 || args.size() > 3 || (args.size() == 3 && args[2] != "--json")) {
    err << "myriad sweep collect: error: needs DIR (and optionally --json)\n" << kSweepUsage;
    return kExitBadInput;
  }
  Result<SweepPlan> plan = ReadPlan(args[1]);
  if (!plan.ok()) {
    err << "myriad: error: " << plan.status().message() << "\n";
    return kExitBadInput;
  }
  SweepPlan collected = std::move(plan).value();
  return WriteResults(collected, args[1], args.size() == 3, out, err);
}

std::string SlurmScript(const SweepPlan& plan, const std::string& dir, int jobs) {
  const std::string abs_dir = fs::absolute(dir).lexically_normal().string();
  return fmt::format(
      "#!/bin/bash\n"
      "# A Slurm job array of the sweep {}: one task per point (docs/sweep.md). Submit with\n"
      "#   sbatch {}/sweep.sbatch\n"
      "# and when every task has ended, merge their results with\n"
      "#   {} sweep collect {}\n"
      "#SBATCH --job-name=myriad-sweep\n"
      "#SBATCH --array=0-{}{}\n"
      "#SBATCH --ntasks=1\n"
      "#SBATCH --cpus-per-task=1\n"
      "#SBATCH --output={}/points/slurm-%a.out\n"
      "exec {} sweep point {} \"$SLURM_ARRAY_TASK_ID\"\n",
      plan.sweep_path, abs_dir, SelfPath(), abs_dir, plan.points.size() - 1,
      jobs > 0 ? fmt::format("%{}", jobs) : "", abs_dir, SelfPath(), abs_dir);
}

}  // namespace

int RunSweep(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto usage_error = [&](const std::string& msg) {
    err << "myriad sweep: error: " << msg << "\n" << kSweepUsage;
    return kExitBadInput;
  };
  if (!args.empty() && args[0] == "collect") return RunCollectCommand(args, out, err);
  if (!args.empty() && args[0] == "point") return RunPointCommand(args, out, err);
  std::string sweep_path, dir, objective;
  int jobs = 0;
  bool slurm = false, json = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      out << kSweepUsage;
      return kExitOk;
    } else if (a == "--out" || a == "--objective") {
      auto v = value();
      if (!v || v->empty()) return usage_error(a + " needs a value");
      (a == "--out" ? dir : objective) = *v;
    } else if (a == "--jobs") {
      auto v = value();
      char* end = nullptr;
      const long n = v ? std::strtol(v->c_str(), &end, 10) : 0;
      if (!v || v->empty() || *end != '\0' || n < 1 || n > 4096)
        return usage_error("--jobs needs a count from 1 to 4096");
      jobs = static_cast<int>(n);
    } else if (a == "--slurm") {
      slurm = true;
    } else if (a == "--json") {
      json = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option '" + a + "'");
    } else if (sweep_path.empty()) {
      sweep_path = a;
    } else {
      return usage_error("unexpected argument '" + a + "'");
    }
  }
  if (sweep_path.empty()) return usage_error("missing SWEEP.toml");
  Result<SweepPlan> loaded = emulator::LoadSweep(sweep_path);
  if (!loaded.ok()) {
    err << "myriad: error: " << loaded.status().message() << "\n";
    return kExitBadInput;
  }
  SweepPlan plan = std::move(loaded).value();
  if (!objective.empty()) {
    Result<emulator::SweepObjective> o = emulator::ParseSweepObjective(objective);
    if (!o.ok()) return usage_error(o.status().message());
    plan.objective = *o;
  }
  if (dir.empty()) {
    fs::path p(sweep_path);
    dir = (p.parent_path() / (p.stem().string() + ".sweep")).string();
  }
  if (Status st = Prepare(plan, dir); !st.ok()) {
    err << "myriad: error: " << st.message() << "\n";
    return kExitBadInput;
  }
  if (!WriteAtomically((fs::path(dir) / "plan.json").string(), emulator::PlanJson(plan), err))
    return kExitFailure;
  for (const SweepPoint& point : plan.points)
    if (point.status != PointStatus::kPending && !RecordWithoutRunning(dir, point, err))
      return kExitFailure;

  if (slurm) {
    const std::string script = (fs::path(dir) / "sweep.sbatch").string();
    if (!WriteAtomically(script, SlurmScript(plan, dir, jobs), err)) return kExitFailure;
    fs::permissions(script, fs::perms::owner_exec, fs::perm_options::add);
    out << fmt::format(
        "sweep {}: {} points prepared in {}\nsubmit: sbatch {}\nthen:   myriad sweep collect {}\n",
        plan.sweep_path, plan.points.size(), dir, script, dir);
    return kExitOk;
  }

  // Locally: the pending points, --jobs at a time, each as its own process.
  std::vector<int> todo;
  for (SweepPoint& point : plan.points)
    if (point.status == PointStatus::kPending && !AlreadyDone(dir, &point))
      todo.push_back(point.index);
  const int parallel =
      jobs > 0 ? jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  if (!json)
    out << fmt::format("sweep {}: {} points, {} to run ({} at a time), results in {}\n",
                       plan.sweep_path, plan.points.size(), todo.size(), parallel, dir);
  std::map<pid_t, int> running;
  std::size_t next = 0;
  bool ok = true;
  while (next < todo.size() || !running.empty()) {
    while (ok && next < todo.size() && static_cast<int>(running.size()) < parallel) {
      const pid_t pid = StartPoint(dir, todo[next]);
      if (pid < 0) {
        err << "myriad: error: cannot start a point: " << std::strerror(errno) << "\n";
        ok = false;
        break;
      }
      running[pid] = todo[next++];
    }
    if (running.empty()) break;
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      err << "myriad: error: waiting for a point: " << std::strerror(errno) << "\n";
      return kExitFailure;
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    SweepPoint& point = plan.points[static_cast<std::size_t>(it->second)];
    running.erase(it);
    if (!FinishPoint(dir, status, &point, err)) ok = false;
    if (!json) PrintPoint(plan, point, out);
  }
  if (!ok) return kExitFailure;
  return WriteResults(plan, dir, json, out, err);
}

}  // namespace myriad::cli
