// Starting and watching the processes of `myriad run`.
#include "myriad/emulator/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

extern char** environ;

namespace myriad::emulator {
namespace {

// The shims a process gets, preloaded so an RPATH to the real toolkit cannot win.
constexpr const char* kShims[] = {"libcudart.so.13",     "libcublas.so.13", "libcublasLt.so.13",
                                  "libnccl.so.2",        "libcuda.so.1",    "libnvidia-ml.so.1",
                                  "libmyriad_preload.so"};

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(addr);
  int port = 29500;  // torchrun's default, if the kernel will not say
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

// Copies one process's output to ours, line by line, with a prefix.
void Relay(int fd, FILE* to, std::string prefix, std::mutex& mu) {
  std::string pending;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    pending.append(buffer, static_cast<std::size_t>(n));
    std::size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      std::lock_guard<std::mutex> lock(mu);
      std::fprintf(to, "%s%s\n", prefix.c_str(), pending.substr(0, newline).c_str());
      std::fflush(to);
      pending.erase(0, newline + 1);
    }
  }
  if (!pending.empty()) {
    std::lock_guard<std::mutex> lock(mu);
    std::fprintf(to, "%s%s\n", prefix.c_str(), pending.c_str());
    std::fflush(to);
  }
  ::close(fd);
}

}  // namespace

Result<LaunchEnv> ParseLaunchEnv(const std::string& name) {
  if (name == "torchrun") return LaunchEnv::kTorchrun;
  if (name == "mpi" || name == "mpirun") return LaunchEnv::kMpi;
  if (name == "slurm") return LaunchEnv::kSlurm;
  return Status::InvalidArgument("unknown launch environment '" + name +
                                 "' (torchrun, mpi, slurm)");
}

Result<std::vector<ProcessPlacement>> PlaceProcesses(int processes, int devices_per_process,
                                                     int gpus_per_node, int total_gpus) {
  if (processes < 1 || devices_per_process < 1 || gpus_per_node < 1)
    return Status::InvalidArgument("a launch needs at least one process with one device");
  const long long needed = static_cast<long long>(processes) * devices_per_process;
  if (needed > total_gpus)
    return Status::InvalidArgument(
        fmt::format("{} processes x {} devices need {} GPUs; the cluster has {}", processes,
                    devices_per_process, needed, total_gpus));
  std::vector<ProcessPlacement> placement(static_cast<size_t>(processes));
  if (devices_per_process > gpus_per_node) {
    // A process that drives several nodes' GPUs (nccl-tests -g 16) sees just its own.
    for (int p = 0; p < processes; ++p)
      placement[static_cast<size_t>(p)] = {p * devices_per_process, devices_per_process};
    return placement;
  }
  const int per_node = gpus_per_node / devices_per_process;
  for (int p = 0; p < processes; ++p) {
    const int first = p / per_node * gpus_per_node;
    placement[static_cast<size_t>(p)] = {first, std::min(gpus_per_node, total_gpus - first)};
  }
  return placement;
}

std::string FindExecutable(const std::string& command) {
  if (command.find('/') != std::string::npos) return command;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, end - start) + "/" + command;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return command;
}

std::map<std::string, std::string> ProcessEnvironment(const LaunchOptions& o, int process,
                                                      int master_port) {
  std::map<std::string, std::string> env;
  const int per_node = std::max(1, o.processes_per_node);
  const int local = process % per_node;
  const int node = process / per_node;
  const int nodes = (o.processes + per_node - 1) / per_node;
  // The last node may hold fewer processes than the others.
  const int on_node = std::min(per_node, o.processes - node * per_node);
  const std::string n = std::to_string(o.processes);
  switch (o.env) {
    case LaunchEnv::kTorchrun:
      env["RANK"] = std::to_string(process);
      env["WORLD_SIZE"] = n;
      env["LOCAL_RANK"] = std::to_string(local);
      env["LOCAL_WORLD_SIZE"] = std::to_string(on_node);
      env["GROUP_RANK"] = std::to_string(node);
      env["MASTER_ADDR"] = "127.0.0.1";
      env["MASTER_PORT"] = std::to_string(master_port);
      break;
    case LaunchEnv::kMpi:
      env["OMPI_COMM_WORLD_RANK"] = std::to_string(process);
      env["OMPI_COMM_WORLD_SIZE"] = n;
      env["OMPI_COMM_WORLD_LOCAL_RANK"] = std::to_string(local);
      env["OMPI_COMM_WORLD_LOCAL_SIZE"] = std::to_string(on_node);
      env["OMPI_COMM_WORLD_NODE_RANK"] = std::to_string(node);
      break;
    case LaunchEnv::kSlurm:
      env["SLURM_PROCID"] = std::to_string(process);
      env["SLURM_NTASKS"] = n;
      env["SLURM_LOCALID"] = std::to_string(local);
      env["SLURM_NODEID"] = std::to_string(node);
      env["SLURM_NNODES"] = std::to_string(nodes);
      env["SLURM_NTASKS_PER_NODE"] = std::to_string(per_node);
      env["SLURM_NPROCS"] = n;
      env["SLURM_JOB_ID"] = "1";
      env["SLURM_STEP_ID"] = "0";
      break;
  }
  // Every GPU of the node is visible, as under torchrun and mpirun: the program picks its own
  // by LOCAL_RANK. CUDA_VISIBLE_DEVICES is not set (one the program sets is honoured).
  const int visible = static_cast<size_t>(process) < o.placement.size()
                          ? o.placement[static_cast<size_t>(process)].visible
                          : o.devices_per_process;
  env["MYRIAD_SOCKET"] = o.socket_path;
  env["MYRIAD_PROCESS"] = std::to_string(process);
  env["MYRIAD_DEVICES"] = std::to_string(visible);
  const char* library_path = std::getenv("LD_LIBRARY_PATH");
  env["LD_LIBRARY_PATH"] =
      o.shim_dir +
      (library_path && *library_path ? std::string(":") + library_path : std::string());
  std::string preload;
  for (const char* shim : kShims) {
    const std::string file = o.shim_dir + "/" + shim;
    if (::access(file.c_str(), R_OK) == 0) preload += (preload.empty() ? "" : ":") + file;
  }
  env["LD_PRELOAD"] = preload;
  // NVTX marks and ranges reach Myriad through NVTX's injection interface.
  const std::string nvtx = o.shim_dir + "/libmyriad_nvtx.so";
  if (::access(nvtx.c_str(), R_OK) == 0) env["NVTX_INJECTION64_PATH"] = nvtx;
  for (const auto& [k, v] : o.extra_env) env[k] = v;
  return env;
}

const ProcessEnd* LaunchResult::first_failure() const {
  for (const ProcessEnd& e : ends)
    if (!e.stopped_by_myriad && (!e.exited || e.status != 0)) return &e;
  return nullptr;
}

int LaunchResult::exit_status() const {
  const ProcessEnd* f = first_failure();
  if (f == nullptr) return timed_out ? 124 : 0;
  return f->exited ? f->status : 128 + f->status;
}

Result<LaunchResult> Launch(const LaunchOptions& options, std::function<void(int)> on_exit) {
  if (options.command.empty()) return Status::InvalidArgument("no command to run");
  const std::string program = FindExecutable(options.command[0]);
  if (Status st = CheckNotStaticCudart(program); !st.ok()) return st;
  const int master_port = FreePort();
  std::mutex output_mu;
  std::vector<std::thread> relays;
  std::vector<pid_t> pids(static_cast<size_t>(options.processes), -1);
  LaunchResult result;
  result.ends.resize(static_cast<size_t>(options.processes));

  std::vector<char*> argv;
  for (const std::string& a : options.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const bool prefix = options.prefix_output && options.processes > 1;
  for (int p = 0; p < options.processes; ++p) {
    // Inherited environment, with ours on top.
    std::map<std::string, std::string> env_map;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      const std::size_t eq = kv.find('=');
      if (eq != std::string::npos) env_map[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : ProcessEnvironment(options, p, master_port)) env_map[k] = v;
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : env_map) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (std::string& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);

    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)
      return Status::Internal(fmt::format("pipe: {}", std::strerror(errno)));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
    pid_t pid = -1;
    const int rc =
        ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    if (rc != 0) {
      ::close(out_pipe[0]);
      ::close(err_pipe[0]);
      for (pid_t started : pids)
        if (started > 0) ::kill(started, SIGKILL);
      for (pid_t started : pids)
        if (started > 0) ::waitpid(started, nullptr, 0);
      for (auto& t : relays) t.join();
      return Status::InvalidArgument(
          fmt::format("cannot start {}: {}", options.command[0], std::strerror(rc)));
    }
    pids[static_cast<size_t>(p)] = pid;
    result.ends[static_cast<size_t>(p)] = {p, pid, false, 0, false};
    const std::string label = prefix ? fmt::format("[rank {}] ", p) : "";
    relays.emplace_back(Relay, out_pipe[0], stdout, label, std::ref(output_mu));
    relays.emplace_back(Relay, err_pipe[0], stderr, label, std::ref(output_mu));
  }

  // Watch: the first process that fails on its own stops the others; so does the timeout.
  const auto start = std::chrono::steady_clock::now();
  int alive = options.processes;
  bool stopping = false;
  auto stop_all = [&](int signal) {
    for (int p = 0; p < options.processes; ++p) {
      ProcessEnd& e = result.ends[static_cast<size_t>(p)];
      if (pids[static_cast<size_t>(p)] > 0) {
        e.stopped_by_myriad = true;
        ::kill(pids[static_cast<size_t>(p)], signal);
      }
    }
  };
  auto stop_requested = start;
  while (alive > 0) {
    bool changed = false;
    for (int p = 0; p < options.processes; ++p) {
      pid_t& pid = pids[static_cast<size_t>(p)];
      if (pid <= 0) continue;
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) != pid) continue;
      ProcessEnd& e = result.ends[static_cast<size_t>(p)];
      e.exited = WIFEXITED(status);
      e.status = e.exited ? WEXITSTATUS(status) : WTERMSIG(status);
      // A process that ended before Myriad asked it to is its own failure or success.
      if (!stopping) e.stopped_by_myriad = false;
      pid = -1;
      --alive;
      changed = true;
      if (on_exit) on_exit(p);
      if (!stopping && (!e.exited || e.status != 0)) {
        stopping = true;
        stop_requested = std::chrono::steady_clock::now();
        stop_all(SIGTERM);
      }
    }
    const auto now = std::chrono::steady_clock::now();
    const bool asked = options.stop != nullptr && options.stop->load();
    const bool timed_out =
        options.timeout_seconds > 0 &&
        std::chrono::duration<double>(now - start).count() > options.timeout_seconds;
    if (!stopping && (asked || timed_out)) {
      result.timed_out = !asked;
      stopping = true;
      stop_requested = now;
      stop_all(SIGTERM);
    }
    // Processes that ignore SIGTERM get SIGKILL two seconds later.
    if (stopping && std::chrono::duration<double>(now - stop_requested).count() > 2.0)
      stop_all(SIGKILL);
    if (!changed) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (auto& t : relays) t.join();
  return result;
}

}  // namespace myriad::emulator
