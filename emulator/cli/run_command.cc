// `myriad run SCENARIO -- command args`: the user's binary on virtual GPUs.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/fold_check.h"
#include "cli/run_flags.h"
#include "myriad/emulator/hang_watch.h"
#include "myriad/emulator/launcher.h"
#include "myriad/emulator/live.h"
#include "myriad/emulator/scenario.h"
#include "myriad/emulator/trace.h"
#include "myriad/emulator/validation_set.h"

#ifndef MYRIAD_SHIM_DIR
#define MYRIAD_SHIM_DIR ""
#endif

namespace myriad::cli {
namespace {

// `torchrun ...`, `python -m torch.distributed.run ...` or the older
// `python -m torch.distributed.launch ...`.
bool IsTorchrun(const std::vector<std::string>& command) {
  if (command.empty()) return false;
  const std::string base = std::filesystem::path(command[0]).filename().string();
  if (base == "torchrun") return true;
  for (std::size_t i = 1; i + 1 < command.size(); ++i) {
    if (command[i] == "-m")
      return command[i + 1] == "torch.distributed.run" ||
             command[i + 1] == "torch.distributed.launch";
    if (command[i].empty() || command[i][0] != '-') return false;  // the script comes first
  }
  return false;
}

const std::string kRunUsage =
    std::string(
        "usage: myriad run SCENARIO [options] [-- COMMAND [ARGS...]]\n"
        "\n"
        "Runs COMMAND (an unmodified CUDA/NCCL/cuBLAS program built with -cudart shared) on the\n"
        "scenario's cluster: PROCESSES copies of it, each driving DEVICES virtual GPUs through\n"
        "Myriad's shim libraries; its own timers print the predicted times. Then prints the same\n"
        "summary as `myriad replay`. Exits with the program's status. Without a command, the\n"
        "scenario's [launch] command runs; [launch] also sets defaults for the options below.\n"
        "\n"
        "  --processes N            processes to start (default: GPUs / devices per process)\n"
        "  --devices-per-process D  GPUs each process drives (default 1): GPUs per node / D\n"
        "                           processes share a node and see all of its GPUs\n"
        "  --env ENV                launcher environment: torchrun (default), mpi, slurm\n"
        "  --timeout SECONDS        stop everything after this much wall time\n"
        "  --hang-timeout SECONDS   stop with an error naming the waits when no thread of the\n"
        "                           program has used the CPU for this long (default 60; 0:\n"
        "                           never; docs/run.md, \"Hangs\")\n"
        "  --shim-dir DIR           where the shim libraries are (default: the build's)\n"
        "  --record TRACE           also write the op streams as a trace (.jsonl or binary)\n"
        "  --fold AXES              rank folding (dp, or tp,dp, cp,dp...): only the ranks at\n"
        "                           index 0 of the folded axes run as processes (with the\n"
        "                           whole world's RANK, WORLD_SIZE, ...); every other rank\n"
        "                           replays its source's ops on its own GPU (docs/run.md,\n"
        "                           \"Folding\")\n"
        "  --mesh AXES              the ranks' layout, fastest axis first, the folded axes\n"
        "                           last, e.g. tp=8,pp=4,dp=4 (default: every rank a replica)\n"
        "  --no-fold                run every rank as a process (overrides [launch] fold)\n"
        "  --check-fold             stop if the fold check finds replicas that differ; by\n"
        "                           default a folded run first runs the program as two\n"
        "                           replicas, folded and not, and warns of the first rank and\n"
        "                           op that differ (mirrors would mispredict them)\n"
        "  --no-check-fold          no fold check (overrides [launch] check_fold)\n"
        "  --program-output FILE    write the processes' stdout and stderr to FILE\n") +
    kRunFlagsUsage;

// How long a failed engine waits for the launcher to see a process that ended badly (its
// usual cause) before telling the others why the run ended.
constexpr int kCauseGraceMs = 250;
constexpr int kExitTimeout = 124;  // as timeout(1)
// The hang watch's default patience, and the CPU time a second one thread of the program must
// use to count as moving: 5% of a core, 25x what a thread waiting under Myriad's preload uses
// to look again every 20 ms (measured: 1-2 ms a second; docs/run.md, "Hangs").
constexpr double kDefaultHangSeconds = 60;
constexpr std::uint64_t kBusyCpuNsPerSecond = 50'000'000;
// The same share of the engine's patience for a timed wait (200 ms) when it asks whether the
// run's processes are busy.
constexpr std::uint64_t kBusyCpuNsPerLook = 10'000'000;

// SIGINT and SIGTERM ask `myriad run` to stop its processes and end, instead of killing
// Myriad and leaving them behind; the previous handlers come back afterwards.
class StopSignals {
 public:
  static inline std::atomic<int> received{0};
  StopSignals() {
    received = 0;
    struct sigaction action {};
    action.sa_handler = [](int signal) { received = signal; };
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace

int RunRun(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto usage_error = [&](const std::string& msg) {
    err << "myriad run: error: " << msg << "\n" << kRunUsage;
    return kExitBadInput;
  };
  std::string scenario_path;
  RunFlags flags;
  emulator::LaunchOptions launch;
  int processes = 0, devices = 0;
  std::string record_path;
  bool env_given = false;
  std::vector<std::string> fold;
  std::string mesh;
  bool fold_given = false, mesh_given = false, check_fold = false, no_check_fold = false;
  double hang_seconds = kDefaultHangSeconds;
  std::string program_output;
  const char* env_shims = std::getenv("MYRIAD_SHIM_DIR");
  launch.shim_dir = env_shims && *env_shims ? env_shims : MYRIAD_SHIM_DIR;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string flag_error;
    if (a == "--") {
      ++i;
      break;
    }
    if (ParseRunFlag(args, i, flags, flag_error)) {
      if (!flag_error.empty()) return usage_error(flag_error);
      continue;
    }
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    auto count = [&](int* into) {
      const std::string* v = value();
      char* end = nullptr;
      const long n = v ? std::strtol(v->c_str(), &end, 10) : 0;
      if (!v || *end != '\0' || n < 1 || n > 1'000'000) return false;
      *into = static_cast<int>(n);
      return true;
    };
    if (a == "--help" || a == "-h") {
      out << kRunUsage;
      return kExitOk;
    } else if (a == "--processes") {
      if (!count(&processes)) return usage_error("--processes needs a whole number >= 1");
    } else if (a == "--devices-per-process") {
      if (!count(&devices)) return usage_error("--devices-per-process needs a whole number >= 1");
    } else if (a == "--env") {
      const std::string* v = value();
      auto env = v ? emulator::ParseLaunchEnv(*v)
                   : Result<emulator::LaunchEnv>(Status::InvalidArgument("--env needs a value"));
      if (!env.ok()) return usage_error(env.status().message());
      launch.env = *env;
      env_given = true;
    } else if (a == "--timeout") {
      const std::string* v = value();
      char* end = nullptr;
      const double t = v ? std::strtod(v->c_str(), &end) : -1;
      if (!v || *end != '\0' || !(t > 0)) return usage_error("--timeout needs seconds > 0");
      launch.timeout_seconds = t;
    } else if (a == "--hang-timeout") {
      const std::string* v = value();
      char* end = nullptr;
      const double t = v ? std::strtod(v->c_str(), &end) : -1;
      if (!v || *end != '\0' || !(t >= 0))
        return usage_error("--hang-timeout needs seconds >= 0 (0: never)");
      hang_seconds = t;
    } else if (a == "--record") {
      const std::string* v = value();
      if (!v) return usage_error("--record needs a file");
      record_path = *v;
    } else if (a == "--fold") {
      const std::string* v = value();
      if (!v || v->empty()) return usage_error("--fold needs the axes to fold (dp; tp,dp; cp,dp)");
      fold.clear();
      for (std::size_t start = 0; start <= v->size();) {
        const std::size_t end = std::min(v->find(',', start), v->size());
        fold.push_back(v->substr(start, end - start));
        start = end + 1;
      }
      fold_given = true;
    } else if (a == "--no-fold") {
      fold.clear();
      fold_given = true;
    } else if (a == "--check-fold") {
      check_fold = true;
    } else if (a == "--no-check-fold") {
      no_check_fold = true;
    } else if (a == "--program-output") {
      const std::string* v = value();
      if (!v || v->empty()) return usage_error("--program-output needs a file");
      program_output = *v;
    } else if (a == "--mesh") {
      const std::string* v = value();
      if (!v || v->empty()) return usage_error("--mesh needs AXIS=SIZE,... (e.g. tp=8,dp=4)");
      mesh = *v;
      mesh_given = true;
    } else if (a == "--shim-dir") {
      const std::string* v = value();
      if (!v) return usage_error("--shim-dir needs a directory");
      launch.shim_dir = *v;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option '" + a + "'");
    } else if (scenario_path.empty()) {
      scenario_path = a;
    } else {
      return usage_error("unexpected argument '" + a + "' (put the command after --)");
    }
  }
  launch.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (scenario_path.empty()) return usage_error("missing SCENARIO");

  auto scenario = emulator::LoadScenario(scenario_path);
  if (!scenario.ok()) {
    err << "myriad: error: " << scenario.status().message() << "\n";
    return kExitBadInput;
  }
  const netmodel::Cluster& cluster = scenario->cluster;
  // The scenario's [launch] gives what the command line does not.
  const emulator::LaunchSettings& settings = scenario->launch;
  if (launch.command.empty()) launch.command = settings.command;
  if (launch.command.empty())
    return usage_error("missing the command to run (after --, or [launch] command)");
  if (processes == 0) processes = settings.processes;
  if (devices == 0) devices = settings.devices_per_process;
  if (!env_given) launch.env = *emulator::ParseLaunchEnv(settings.env);
  if (!settings.virtual_host_clock) launch.extra_env["MYRIAD_HOST_CLOCK"] = "real";
  // torchrun as the command: one agent per node, seeing the node's GPUs; its workers (the
  // ranks) are processes of its own, which Myriad tells apart by their pids.
  const bool torchrun = IsTorchrun(launch.command) && launch.env == emulator::LaunchEnv::kTorchrun;
  if (torchrun) {
    launch.agent_per_node = true;
    if (devices == 0) devices = cluster.gpus_per_node;
    if (processes == 0) processes = std::max(1, cluster.total_gpus() / cluster.gpus_per_node);
  }
  // One GPU per process unless told otherwise, as torchrun: processes fill nodes in order.
  if (devices == 0) devices = 1;
  if (processes == 0) processes = std::max(1, cluster.total_gpus() / devices);
  auto placement = emulator::PlaceProcesses(processes, devices, cluster.gpus_per_node,
                                            cluster.total_gpus(), torchrun);
  if (!placement.ok())
    return usage_error(fmt::format("{} ({})", placement.status().message(), scenario->name));
  // Rank folding: the world is every process's ranks; only the first replica's run.
  if (!fold_given) fold = settings.fold;
  if (!mesh_given) mesh = settings.mesh;
  // The fold check: asked for (a difference stops the run), turned off, or by default run
  // with a difference warned of (docs/run.md, "Checking a fold").
  const bool strict_fold_check = !no_check_fold && (check_fold || settings.check_fold == true);
  const bool fold_check_off = no_check_fold || (!check_fold && settings.check_fold == false);
  auto plan = emulator::PlanFold(mesh, fold, processes * devices);
  if (!plan.ok()) return usage_error(plan.status().message());
  if (plan->folded()) {
    // The live ranks are whole processes (process p drives ranks p x D to p x D + D - 1);
    // torchrun's agents start only their live workers, so an agent may hold mirrors too.
    for (int p = 0; p < processes; ++p) {
      int live_here = 0;
      for (int d = 0; d < devices; ++d) live_here += plan->is_live(p * devices + d) ? 1 : 0;
      if (live_here == 0) continue;
      if (live_here != devices && !torchrun)
        return usage_error(fmt::format(
            "--fold with --devices-per-process {} needs each process's ranks to be all live or "
            "all mirrors, and process {} holds {} live rank(s) of mesh {} (live ranks {})",
            devices, p, live_here, plan->mesh, plan->live_ranks_text()));
      launch.live_processes.push_back(p);
    }
    if (launch.env == emulator::LaunchEnv::kMpi)
      return usage_error(
          "--fold starts the live processes itself: not under mpirun yet (use --env torchrun "
          "or slurm; docs/run.md, \"Folding\", says what MPI would need)");
    // Torch's ranks: the processes, or torchrun's workers.
    if (torchrun) {
      for (int l = 0; l < plan->live; ++l) launch.live_ranks.push_back(plan->live_rank(l));
    } else {
      launch.live_ranks = launch.live_processes;
    }
    launch.fold_world = torchrun ? plan->world : processes;
    // Beyond 128 ranks PyTorch makes its NCCL communicators with one unique id per 128 ranks,
    // each from a rank of its own (ncclCommInitRankScalable), and those ranks are mirrors:
    // with one root, rank 0 makes the only id.
    if (std::getenv("TORCH_NCCL_RANKS_PER_ROOT") == nullptr)
      launch.extra_env["TORCH_NCCL_RANKS_PER_ROOT"] = std::to_string(plan->world);
  }
  if (strict_fold_check && (!plan->folded() || plan->replicas < 2))
    return usage_error("--check-fold checks a fold: it needs --fold dp over 2 or more replicas");
  // The check runs two data-parallel replicas as the mesh's slowest axis; mirrors along tp or
  // cp, and replicas with a live axis slower than dp, are not checked yet.
  const bool only_dp_folded = plan->folded_names() == "dp" && plan->contiguous();
  const std::string unchecked =
      plan->contiguous() ? plan->folded_names()
                         : plan->folded_names() + " with a live axis slower than a folded one";
  if (strict_fold_check && !only_dp_folded)
    return usage_error(fmt::format(
        "--check-fold checks data-parallel replicas only, not yet a fold of {} (check a small "
        "folded and unfolded pair by hand: docs/run.md, \"Folding\")",
        unchecked));
  if (strict_fold_check && torchrun)
    return usage_error(
        "--check-fold with torchrun as the command is not supported yet (run the script itself "
        "with --env torchrun: Myriad then starts its processes)");
  check_fold = strict_fold_check || (!fold_check_off && plan->folded() && plan->replicas >= 2);
  std::string fold_check_note;
  if (check_fold && torchrun) {  // by default: said, not refused
    check_fold = false;
    fold_check_note =
        "fold check: not run (torchrun as the command is not supported by the check yet): "
        "that the replicas do alike work is assumed, not checked";
  } else if (check_fold && !only_dp_folded) {
    check_fold = false;
    fold_check_note = fmt::format(
        "fold check: not run (it checks data-parallel replicas only, not yet a fold of {}): "
        "that the mirrors do their sources' work is assumed, not checked",
        unchecked);
  }
  launch.processes = processes;
  launch.devices_per_process = devices;
  launch.processes_per_node = std::max(1, cluster.gpus_per_node / devices);
  launch.placement = *placement;
  // What the shims report as the device, and how they keep the host clock.
  launch.extra_env["MYRIAD_GPU_NAME"] = cluster.gpu.name;
  launch.extra_env["MYRIAD_GPU_MEMORY"] =
      std::to_string(static_cast<std::uint64_t>(cluster.gpu.hbm_bytes));
  launch.extra_env["MYRIAD_GPU_SMS"] = std::to_string(cluster.gpu.sm_count);
  launch.extra_env["MYRIAD_GPU_MAJOR"] = std::to_string(cluster.gpu.compute_capability_major);
  launch.extra_env["MYRIAD_GPU_MINOR"] = std::to_string(cluster.gpu.compute_capability_minor);
  // torch.compile: Inductor's pool of compile workers answers through a pipe that a thread
  // reads with a plain blocking read(), which the shims do not see, so that thread would hold
  // virtual time (docs/pytorch.md). Compiling in the process itself avoids the pool; a user
  // who sets the variable keeps their choice.
  if (std::getenv("TORCHINDUCTOR_COMPILE_THREADS") == nullptr)
    launch.extra_env["TORCHINDUCTOR_COMPILE_THREADS"] = "1";
  if (settings.measure_host_time) {
    launch.extra_env["MYRIAD_HOST_TIME"] = "measured";
    launch.extra_env["MYRIAD_HOST_TIME_SCALE"] = std::to_string(settings.host_time_scale);
  }

  const std::string program = emulator::FindExecutable(launch.command[0]);
  if (::access(program.c_str(), X_OK) != 0) {
    err << "myriad: error: cannot start " << launch.command[0] << ": " << std::strerror(errno)
        << "\n";
    return kExitBadInput;
  }
  if (Status st = emulator::CheckNotStaticCudart(program); !st.ok()) {
    err << "myriad: error: " << st.message() << "\n";
    return kExitBadInput;
  }
  auto linkage = emulator::InspectElf(program);
  if (linkage.ok() && linkage->links_cudart_shared &&
      ::access((launch.shim_dir + "/libcudart.so.13").c_str(), R_OK) != 0) {
    err << "myriad: error: " << program << " uses the CUDA runtime, but the shims are not in '"
        << launch.shim_dir << "' (build with -DMYRIAD_WITH_CUDA=ON, or give --shim-dir)\n";
    return kExitBadInput;
  }

  // The check runs first: a fold it refutes is not worth the long run.
  if (check_fold) {
    FoldCheckRun check;
    check.scenario_path = scenario_path;
    check.command = launch.command;
    check.env = emulator::ToString(launch.env);
    check.live_ranks = plan->live;
    check.devices_per_process = devices;
    check.mesh_of_two = plan->mesh.substr(0, plan->mesh.rfind("dp=")) + "dp=2";
    check.timeout_seconds = launch.timeout_seconds;
    check.shim_dir = launch.shim_dir;
    auto checked = CheckFold(check);
    if (!checked.ok() && strict_fold_check) {
      err << "myriad: error: " << checked.status().message() << "\n";
      return kExitFailure;
    }
    if (!checked.ok()) {  // the default check: the folded run goes on, and says so
      fold_check_note = fmt::format(
          "{}; this run's folded figures assume alike replicas (--check-fold stops at such a "
          "difference, --no-check-fold skips the check)",
          checked.status().message());
      err << "myriad: warning: " << fold_check_note << "\n";
    } else {
      fold_check_note = *checked;
    }
  }
  // The program's own output, where asked (a file of ours, closed when the run is done).
  std::unique_ptr<FILE, int (*)(FILE*)> output_file(nullptr, &std::fclose);
  if (!program_output.empty()) {
    output_file.reset(std::fopen(program_output.c_str(), "w"));
    if (!output_file) {
      err << "myriad: error: cannot write --program-output " << program_output << ": "
          << std::strerror(errno) << "\n";
      return kExitBadInput;
    }
    launch.output = output_file.get();
  }

  emulator::LiveOptions live;
  live.placement = *placement;
  live.fold = *plan;
  if (plan->folded()) {
    live.placement.clear();
    for (int p : launch.live_processes)
      live.placement.push_back((*placement)[static_cast<std::size_t>(p)]);
  }
  live.description = "process " + launch.command[0];
  auto workload = emulator::LiveWorkload::Start(live);
  if (!workload.ok()) {
    err << "myriad: error: " << workload.status().message() << "\n";
    return kExitFailure;
  }
  launch.socket_path = (*workload)->socket_path();

  // The processes run beside the engine; each one's end closes its ranks. SIGINT and SIGTERM
  // stop them (and the engine) as a timeout does; a watchdog ends the engine's wait then.
  std::atomic<bool> stop_processes{false};
  launch.stop = &stop_processes;
  StopSignals signals;
  launch.stop_signal = &StopSignals::received;
  Result<emulator::LaunchResult> launched = Status::Internal("not launched");
  std::mutex ends_mu;
  std::string first_end;  // the first process that failed on its own, as soon as it is seen
  // Processes that ended once Myriad had begun to stop the run (a timeout, a hang, a signal, an
  // engine error): their ends are consequences, as a torchrun agent's whose worker was told.
  std::set<int> ended_after_stop;
  // The watchdog's clock starts before the launcher's, so the timeout is normally the
  // watchdog's; when a loaded machine lets the launcher's fire first, its result says so.
  const auto start = std::chrono::steady_clock::now();
  std::thread launcher([&] {
    ::pthread_setname_np(::pthread_self(), "myriad-launch");  // it polls: not the program
    launched = emulator::Launch(launch, [&](const emulator::ProcessEnd& e) {
      (*workload)->ProcessExited(e.process);
      std::lock_guard<std::mutex> lock(ends_mu);
      if (stop_processes.load()) ended_after_stop.insert(e.process);
      if (first_end.empty() && !stop_processes.load() && !e.stopped_by_myriad &&
          !(e.exited && e.status == 0) && !(*workload)->WasTold(e.process))
        first_end = emulator::DescribeEnd(e);
    });
    if (!launched.ok()) (*workload)->Shutdown(launched.status().message());
  });
  std::atomic<bool> engine_done{false};
  std::string stopped_why;  // set by the watchdog before it shuts the engine down
  int stopped_status = 0;
  std::thread watchdog([&, start] {
    ::pthread_setname_np(::pthread_self(), "myriad-watchdog");  // not counted by the hang watch
    emulator::HangWatch hangs(::getpid());
    auto last_look = start;
    auto busy_at = start;  // the last look that found the program moving
    while (!engine_done) {
      const auto now = std::chrono::steady_clock::now();
      const double elapsed = std::chrono::duration<double>(now - start).count();
      const int signal = StopSignals::received.load();
      std::string hang;
      if (hang_seconds > 0 && now - last_look >= std::chrono::seconds(1)) {
        const double looked = std::chrono::duration<double>(now - last_look).count();
        last_look = now;
        if (hangs.Look(static_cast<std::uint64_t>(looked * kBusyCpuNsPerSecond))) busy_at = now;
        if (std::chrono::duration<double>(now - busy_at).count() >= hang_seconds)
          hang = fmt::format(
              "no progress for {} s of wall time: no thread of the program did work on the CPU, "
              "each asleep where Myriad cannot see why (docs/run.md, \"Hangs\"): {}",
              hang_seconds, emulator::DescribeBlocked(hangs.Blocked()));
      }
      if (signal != 0 || !hang.empty() ||
          (launch.timeout_seconds > 0 && elapsed > launch.timeout_seconds)) {
        stopped_why = signal != 0     ? fmt::format("stopped by SIG{}", ::sigabbrev_np(signal))
                      : !hang.empty() ? hang
                                      : fmt::format("timed out after {} s of wall time",
                                                    launch.timeout_seconds);
        stopped_status = signal != 0 ? 128 + signal : kExitTimeout;
        stop_processes = true;
        (*workload)->Shutdown(stopped_why);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  emulator::RecordingWorkload recording(**workload);
  emulator::Workload& engine_input =
      record_path.empty() ? static_cast<emulator::Workload&>(**workload) : recording;
  emulator::EngineOptions options = flags.engine_options(*scenario, err);
  // The engine asks before a timed wait's deadline passes while a thread waits outside its
  // view: a process busy on its CPU may still end that wait (its own look at /proc).
  emulator::HangWatch engine_watch(::getpid(), /*count_root=*/false);
  options.host_busy = [&engine_watch] { return engine_watch.Look(kBusyCpuNsPerLook); };
  emulator::RunResult partial;
  auto result = emulator::RunEngine(engine_input, cluster, options, &partial);
  engine_done = true;
  if (!result.ok()) {
    // The processes may wait for answers that will not come: tell them why, and stop the
    // ones that do not listen. A process that ended badly often is why (its peers wait for
    // it): give the launcher a moment to see it, so that what they hear names the cause.
    std::string why = result.status().message();
    for (int waited_ms = 0; waited_ms < kCauseGraceMs; waited_ms += 5) {
      {
        std::lock_guard<std::mutex> lock(ends_mu);
        if (!first_end.empty()) {
          why = first_end + "; then: " + why;
          break;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    (*workload)->Abort(why);
    stop_processes = true;
  }
  watchdog.join();
  launcher.join();
  (*workload)->Stop();
  if (!launched.ok()) {
    err << "myriad: error: " << launched.status().message() << "\n";
    return kExitBadInput;
  }
  if (stopped_why.empty() && launched->timed_out) {
    stopped_why = fmt::format("timed out after {} s of wall time", launch.timeout_seconds);
    stopped_status = kExitTimeout;
  } else if (stopped_why.empty() && launched->stopped_by_signal != 0) {
    stopped_why = fmt::format("stopped by SIG{}", ::sigabbrev_np(launched->stopped_by_signal));
    stopped_status = 128 + launched->stopped_by_signal;
  }

  // What went wrong first is the cause; what it led to comes after, never before it. A
  // process told that the run had ended exits because of it.
  const auto told = [&](int p) { return (*workload)->WasTold(p) || ended_after_stop.count(p) > 0; };
  const emulator::ProcessEnd* failed = launched->first_failure(told);
  std::optional<emulator::RunContext::Failure> failure;
  int stopped = 0;
  for (const emulator::ProcessEnd& e : launched->ends) stopped += e.stopped_by_myriad ? 1 : 0;
  const std::string stopped_note =
      stopped > 0 ? fmt::format("stopped {} process{}", stopped, stopped == 1 ? "" : "es") : "";
  if (failed != nullptr) {
    failure = {emulator::DescribeEnd(*failed), launched->exit_status(told), {}};
    if (!result.ok()) failure->consequences.push_back(result.status().message());
  } else if (!stopped_why.empty()) {
    failure = {stopped_why, stopped_status, {}};
  } else if (!result.ok()) {
    failure = {result.status().message(), kExitFailure, {}};
  }
  if (failure && !stopped_note.empty()) failure->consequences.push_back(stopped_note);
  if (failure) {
    err << "myriad: error: " << failure->cause << "\n";
    for (const std::string& c : failure->consequences) err << "myriad: then: " << c << "\n";
  }
  if (!failure && !record_path.empty()) {
    if (Status st = recording.Write(record_path); !st.ok()) {
      err << "myriad: error: " << st.message() << "\n";
      return kExitFailure;
    }
  }
  emulator::RunContext context{"run",
                               scenario->name,
                               scenario_path,
                               live.description,
                               std::string(netmodel::ToString(options.fidelity)),
                               &cluster,
                               {},
                               failure,
                               {}};
  // Kernels are timed, not run: what a program reads back holds only what copies, memsets and
  // small collectives put there.
  if (const std::uint64_t read = (*workload)->bytes_read_back(); read > 0)
    context.notes.push_back(fmt::format(
        "{} bytes were copied back from device memory: Myriad times kernels but does not run "
        "them, so values computed on the GPU (losses, checks) are not real (copies and small "
        "collectives move real bytes)",
        read));
  // Work a thread enqueued behind virtual time started when the engine got to it, which follows
  // real time: say so, since another run may then differ.
  if (const emulator::RunResult& r = result.ok() ? *result : partial; r.late_ops > 0)
    context.notes.push_back(fmt::format(
        "{} device ops were enqueued by host threads whose clocks virtual time had already "
        "passed (by up to {:.3f} us): they started when the engine reached them, which follows "
        "real time, so another run may differ (docs/run.md, \"Host time\")",
        r.late_ops, emulator::ToMicros(r.most_late)));
  if (const auto errors = (*workload)->cuda_errors(); !errors.empty()) {
    std::string list;
    for (const auto& [name, count] : errors)
      list += fmt::format("{}{} x {}", list.empty() ? "" : ", ", name, count);
    context.notes.push_back(fmt::format(
        "the program's CUDA calls returned errors, as a real GPU's would have: {} (docs/run.md)",
        list));
  }
  if (plan->folded())
    context.notes.push_back(fmt::format(
        "rank folding (--fold {}, mesh {}): {} {} ran as {}; the other {} ranks replayed "
        "their op streams as mirrors (each mirrors the live rank with its coordinates on the "
        "other axes; the JSON report's ranks say mirror_of)",
        plan->folded_names(), plan->mesh, plan->live == 1 ? "rank" : "ranks",
        plan->live_ranks_text(), plan->live == 1 ? "a process" : "processes",
        plan->world - plan->live));
  if (!fold_check_note.empty()) context.notes.push_back(fold_check_note);
  // How sure this is: the published rows of programs run as this one was (docs/validation.md).
  context.notes.push_back(
      emulator::ValidationLine(emulator::PredictedBy::kRun, cluster.gpu, /*moe=*/false));
  // A run that ended badly still reports what ran, marked as failed.
  const emulator::RunResult& ran = result.ok() ? *result : partial;
  // An empty report is not a prediction: say why nothing was simulated.
  if (ran.world_size == 0 && !failure)
    context.notes.push_back(
        "no process called CUDA, cuBLAS or NCCL through Myriad's shims, so nothing was "
        "simulated (a program that links the CUDA runtime statically is not seen: build it "
        "with -cudart shared; docs/run.md)");
  const int status = FinishRun(ran, context, flags, out, err);
  if (failure) return status != kExitOk ? status : failure->exit_status;
  return status != kExitOk ? status
                           : GateAgainstBaseline(ran, context, flags, flags.json ? err : out, err);
}

}  // namespace myriad::cli
