// `myriad run SCENARIO -- command args`: the user's binary on virtual GPUs.
#include <fmt/format.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/run_flags.h"
#include "myriad/emulator/launcher.h"
#include "myriad/emulator/live.h"
#include "myriad/emulator/scenario.h"
#include "myriad/emulator/trace.h"

#ifndef MYRIAD_SHIM_DIR
#define MYRIAD_SHIM_DIR ""
#endif

namespace myriad::cli {
namespace {

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
        "  --shim-dir DIR           where the shim libraries are (default: the build's)\n"
        "  --record TRACE           also write the op streams as a trace (.jsonl or binary)\n") +
    kRunFlagsUsage;

std::string DescribeEnd(const emulator::ProcessEnd& e) {
  if (e.exited) return fmt::format("exited with status {}", e.status);
  const char* name = ::sigabbrev_np(e.status);
  return fmt::format("was killed by signal {} (SIG{})", e.status, name ? name : "?");
}

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
    } else if (a == "--record") {
      const std::string* v = value();
      if (!v) return usage_error("--record needs a file");
      record_path = *v;
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
  // One GPU per process unless told otherwise, as torchrun: processes fill nodes in order.
  if (devices == 0) devices = 1;
  if (processes == 0) processes = std::max(1, cluster.total_gpus() / devices);
  auto placement =
      emulator::PlaceProcesses(processes, devices, cluster.gpus_per_node, cluster.total_gpus());
  if (!placement.ok())
    return usage_error(fmt::format("{} ({})", placement.status().message(), scenario->name));
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

  emulator::LiveOptions live;
  live.placement = *placement;
  live.description = "process " + launch.command[0];
  auto workload = emulator::LiveWorkload::Start(live);
  if (!workload.ok()) {
    err << "myriad: error: " << workload.status().message() << "\n";
    return kExitFailure;
  }
  launch.socket_path = (*workload)->socket_path();

  // The processes run beside the engine; each one's end closes its ranks.
  std::atomic<bool> stop_processes{false};
  launch.stop = &stop_processes;
  Result<emulator::LaunchResult> launched = Status::Internal("not launched");
  std::thread launcher([&] {
    launched = emulator::Launch(launch, [&](int p) { (*workload)->ProcessExited(p); });
    if (!launched.ok())
      for (int p = 0; p < processes; ++p) (*workload)->ProcessExited(p);
  });
  emulator::RecordingWorkload recording(**workload);
  emulator::Workload& engine_input =
      record_path.empty() ? static_cast<emulator::Workload&>(**workload) : recording;
  const emulator::EngineOptions options = flags.engine_options(*scenario);
  auto result = emulator::RunEngine(engine_input, cluster, options);
  if (!result.ok()) {
    // The processes may wait for answers that will not come: tell them why, and stop the
    // ones that do not listen.
    (*workload)->Abort(result.status().message());
    stop_processes = true;
  }
  launcher.join();
  (*workload)->Stop();

  if (!launched.ok()) {
    err << "myriad: error: " << launched.status().message() << "\n";
    return kExitBadInput;
  }
  if (launched->timed_out) {
    err << fmt::format("myriad: error: timed out after {} s of wall time; stopped {} processes\n",
                       launch.timeout_seconds, processes);
    return launched->exit_status();
  }
  if (const emulator::ProcessEnd* failure = launched->first_failure()) {
    // A process that failed because the run did (it was told why) comes after the reason.
    if (!result.ok()) err << "myriad: error: " << result.status().message() << "\n";
    err << fmt::format("myriad: error: rank {} (pid {}) {}{}\n", failure->process, failure->pid,
                       DescribeEnd(*failure),
                       processes > 1 ? "; the other processes were stopped" : "");
    return launched->exit_status();
  }
  if (!result.ok()) {
    err << "myriad: error: " << result.status().message() << "\n";
    return kExitFailure;
  }
  if (!record_path.empty()) {
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
                               {}};
  const int status = FinishRun(*result, context, flags, out, err);
  return status != kExitOk ? status : GateAgainstBaseline(*result, context, flags, out, err);
}

}  // namespace myriad::cli
