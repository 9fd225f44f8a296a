// Starting and watching the processes of `myriad run`.
#include "myriad/emulator/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
// Preloaded, so that the shims win over a real library found first through a DT_RPATH (PyTorch's
// libraries point theirs at the nvidia-* wheels): a SONAME already loaded is not loaded again.
constexpr const char* kShims[] = {
    "libcudart.so.13", "libcublas.so.13",    "libcublasLt.so.13",    "libnccl.so.2",
    "libcuda.so.1",    "libnvidia-ml.so.1",  "libcudnn.so.9",        "libcusparse.so.12",
    "libcufft.so.12",  "libcusolver.so.12",  "libnvrtc.so.13",       "libcupti.so.13",
    "libcufile.so.0",  "libcusparseLt.so.0", "libnvshmem_host.so.3", "libmyriad_preload.so"};

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

// How long processes told why the run ended have to exit on their own before SIGTERM.
constexpr double kToldGraceSeconds = 1.0;

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

const char* ToString(LaunchEnv env) {
  switch (env) {
    case LaunchEnv::kTorchrun:
      return "torchrun";
    case LaunchEnv::kMpi:
      return "mpi";
    case LaunchEnv::kSlurm:
      return "slurm";
  }
  return "torchrun";
}

Result<std::vector<ProcessPlacement>> PlaceProcesses(int processes, int devices_per_process,
                                                     int gpus_per_node, int total_gpus,
                                                     bool agents) {
  if (processes < 1 || devices_per_process < 1 || gpus_per_node < 1)
    return Status::InvalidArgument("a launch needs at least one process with one device");
  const long long needed = static_cast<long long>(processes) * devices_per_process;
  if (needed > total_gpus)
    return Status::InvalidArgument(
        fmt::format("{} processes x {} devices need {} GPUs; the cluster has {}", processes,
                    devices_per_process, needed, total_gpus));
  std::vector<ProcessPlacement> placement(static_cast<size_t>(processes));
  if (devices_per_process > gpus_per_node || agents) {
    // A process that drives several nodes' GPUs (nccl-tests -g 16) sees just its own, as
    // does a torchrun agent.
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
  // Under rank folding, the process's place among the started ones: Myriad's process index and
  // the rendezvous's node rank (the live agents form it).
  int started = process;
  const auto live = std::find(o.live_processes.begin(), o.live_processes.end(), process);
  if (live != o.live_processes.end()) started = static_cast<int>(live - o.live_processes.begin());
  switch (o.env) {
    case LaunchEnv::kTorchrun:
      env["RANK"] = std::to_string(process);
      env["WORLD_SIZE"] = n;
      env["LOCAL_RANK"] = std::to_string(local);
      env["LOCAL_WORLD_SIZE"] = std::to_string(on_node);
      env["GROUP_RANK"] = std::to_string(node);
      env["MASTER_ADDR"] = "127.0.0.1";
      env["MASTER_PORT"] = std::to_string(master_port);
      if (o.agent_per_node) {
        // Each agent is one of torchrun's nodes, whether it drives a whole node's GPUs or
        // some of them (--devices-per-process below the node's GPUs: agents share a node).
        // Under rank folding only the live agents run: they form the rendezvous.
        env["PET_NNODES"] = std::to_string(
            o.live_processes.empty() ? o.processes : static_cast<int>(o.live_processes.size()));
        env["PET_NODE_RANK"] = std::to_string(o.live_processes.empty() ? process : started);
        // The agent's place in the unfolded job, whose workers' ranks follow from it.
        env["MYRIAD_AGENT"] = std::to_string(process);
        env["PET_MASTER_ADDR"] = "127.0.0.1";
        env["PET_MASTER_PORT"] = std::to_string(master_port);
      }
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
  // Under mpirun the shim takes its index from OMPI_COMM_WORLD_RANK.
  if (o.env != LaunchEnv::kMpi) env["MYRIAD_PROCESS"] = std::to_string(started);
  env["MYRIAD_DEVICES"] = std::to_string(visible);
  // Rank folding: how many of the world's ranks run (Python's hook sizes torch's rendezvous
  // for them, interpose/python/sitecustomize.py).
  if (!o.live_processes.empty() && !o.live_ranks.empty() &&
      static_cast<int>(o.live_ranks.size()) < o.fold_world) {
    std::string ranks;
    for (int r : o.live_ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    env["MYRIAD_FOLD_LIVE"] = ranks;
    env["MYRIAD_FOLD_WORLD"] = std::to_string(o.fold_world);
  }
  env["MYRIAD_NODE"] = std::to_string(node);
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
  // Python processes run Myriad's hook (interpose/python/sitecustomize.py), which runs the
  // sitecustomize it shadows first.
  const std::string python_hook = o.shim_dir + "/python";
  if (::access((python_hook + "/sitecustomize.py").c_str(), R_OK) == 0) {
    const char* python_path = std::getenv("PYTHONPATH");
    env["PYTHONPATH"] = python_hook + (python_path && *python_path ? std::string(":") + python_path
                                                                   : std::string());
  }
  // NVTX marks and ranges reach Myriad through NVTX's injection interface.
  const std::string nvtx = o.shim_dir + "/libmyriad_nvtx.so";
  if (::access(nvtx.c_str(), R_OK) == 0) env["NVTX_INJECTION64_PATH"] = nvtx;
  for (const auto& [k, v] : o.extra_env) env[k] = v;
  return env;
}

const ProcessEnd* LaunchResult::first_failure(const std::function<bool(int)>& skip) const {
  const ProcessEnd* first = nullptr;
  for (const ProcessEnd& e : ends) {
    if (e.stopped_by_myriad || (e.exited && e.status == 0) || (skip && skip(e.process))) continue;
    if (first == nullptr || e.order < first->order) first = &e;
  }
  return first;
}

int LaunchResult::exit_status(const std::function<bool(int)>& skip) const {
  if (const ProcessEnd* f = first_failure(skip)) return f->exited ? f->status : 128 + f->status;
  if (timed_out) return 124;
  if (stopped_by_signal != 0) return 128 + stopped_by_signal;
  return 0;
}

std::string DescribeEnd(const ProcessEnd& e) {
  if (e.exited) return fmt::format("{} (pid {}) exited with status {}", e.who, e.pid, e.status);
  const char* name = ::sigabbrev_np(e.status);
  return fmt::format("{} (pid {}) was killed by signal {} (SIG{})", e.who, e.pid, e.status,
                     name ? name : "?");
}

namespace {

// A process of its own that outlives Myriad however Myriad ends (SIGKILL included): when the
// pipe from Myriad closes without a "done", it kills the launched process group and removes
// the socket's directory. Forked before any process starts; it touches nothing else.
class Reaper {
 public:
  explicit Reaper(const std::string& socket_path) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    const std::string dir = socket_path.substr(0, socket_path.rfind('/'));
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return;
    }
    if (pid == 0) {
      // Only async-signal-safe calls from here on: the parent has threads.
      ::close(fds[1]);
      ::syscall(SYS_close_range, 3, fds[0] - 1, 0);
      ::syscall(SYS_close_range, fds[0] + 1, ~0U, 0);
      ::setpgid(0, 0);  // out of the terminal's process group: Ctrl-C is Myriad's to handle
      pid_t group = 0;
      char done = 0;
      const bool got_group = ::read(fds[0], &group, sizeof group) == sizeof group;
      const bool clean = got_group && ::read(fds[0], &done, 1) == 1 && done == 'd';
      if (!clean) {
        if (got_group && group > 1) ::kill(-group, SIGKILL);
        ::unlink(socket_path.c_str());
        ::rmdir(dir.c_str());
      }
      ::_exit(0);
    }
    ::close(fds[0]);
    pid_ = pid;
    fd_ = fds[1];
  }
  // The launched processes' group, once there is one.
  void Watch(pid_t group) {
    if (fd_ >= 0) (void)!::write(fd_, &group, sizeof group);
  }
  ~Reaper() {
    if (fd_ < 0) return;
    const char done = 'd';
    (void)!::write(fd_, &done, 1);
    ::close(fd_);
    ::waitpid(pid_, nullptr, 0);
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
};

// Starts one process in `group` (0: a new group, led by it) that dies with the thread that
// started it (PR_SET_PDEATHSIG). Returns its pid, or -errno.
pid_t Spawn(const std::string& program, char* const argv[], char* const envp[], int out_fd,
            int err_fd, pid_t group) {
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) return -errno;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(status_pipe[0]);
    ::close(status_pipe[1]);
    return -e;
  }
  if (pid == 0) {
    // Async-signal-safe calls only until exec.
    ::setpgid(0, group);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // Myriad died before the line above
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    ::execve(program.c_str(), argv, envp);
    const int e = errno;
    (void)!::write(status_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid, group == 0 ? pid : group);  // also here, so no signal can miss it
  ::close(status_pipe[1]);
  int exec_errno = 0;
  const ssize_t n = ::read(status_pipe[0], &exec_errno, sizeof exec_errno);
  ::close(status_pipe[0]);
  if (n == sizeof exec_errno) {
    ::waitpid(pid, nullptr, 0);
    return -exec_errno;
  }
  return pid;
}

// Whether `pid` has already ended (a zombie not yet reaped), without reaping it.
bool HasEnded(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

}  // namespace

Result<LaunchResult> Launch(const LaunchOptions& options,
                            std::function<void(const ProcessEnd&)> on_exit) {
  if (options.command.empty()) return Status::InvalidArgument("no command to run");
  const std::string program = FindExecutable(options.command[0]);
  if (Status st = CheckNotStaticCudart(program); !st.ok()) return st;
  const int master_port = FreePort();
  std::mutex output_mu;
  std::vector<std::thread> relays;
  // Under mpirun, Myriad starts one process (mpirun), which starts the others.
  const bool via_mpirun = options.env == LaunchEnv::kMpi;
  const int spawned = via_mpirun ? 1
                      : !options.live_processes.empty()
                          ? static_cast<int>(options.live_processes.size())
                          : options.processes;
  // The i-th started process: one of the world's (its RANK and node), Myriad's process i.
  auto world_process = [&](int started) {
    return options.live_processes.empty() ? started
                                          : options.live_processes[static_cast<size_t>(started)];
  };
  std::vector<pid_t> pids(static_cast<size_t>(spawned), -1);
  LaunchResult result;
  result.ends.resize(static_cast<size_t>(spawned));
  Reaper reaper(options.socket_path);
  pid_t group = 0;

  // Inherited environment, with ours on top.
  std::map<std::string, std::string> inherited;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::size_t eq = kv.find('=');
    if (eq != std::string::npos) inherited[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  std::vector<std::string> command = options.command;
  std::string executable = program;
  if (via_mpirun) {
    executable = FindExecutable("mpirun");
    if (::access(executable.c_str(), X_OK) != 0)
      return Status::InvalidArgument(
          "--env mpi starts the processes through mpirun, which is not installed (Debian: "
          "openmpi-bin; scripts/setup.sh installs it)");
    // mpirun itself runs without the shims; its processes get Myriad's environment.
    command = {executable,
               "-np",
               std::to_string(options.processes),
               "--oversubscribe",
               "--bind-to",
               "none",
               "--mca",
               "btl_vader_single_copy_mechanism",
               "none"};
    if (::geteuid() == 0) command.push_back("--allow-run-as-root");
    for (const auto& [k, v] : ProcessEnvironment(options, 0, master_port)) {
      if (k.rfind("OMPI_", 0) == 0) continue;  // mpirun sets its own
      command.push_back("-x");
      command.push_back(k + "=" + v);
    }
    command.insert(command.end(), options.command.begin(), options.command.end());
    command[command.size() - options.command.size()] = program;
  }
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // A failure part way through starting: what started is stopped and waited for, nothing is
  // left running, and the error says what failed.
  auto abandon = [&](const std::string& why) -> Result<LaunchResult> {
    if (group > 0) ::kill(-group, SIGKILL);
    for (pid_t started : pids)
      if (started > 0) ::waitpid(started, nullptr, 0);
    for (auto& t : relays) t.join();
    return Status::InvalidArgument(why);
  };
  const bool prefix = options.prefix_output && spawned > 1;
  for (int p = 0; p < spawned; ++p) {
    std::map<std::string, std::string> env_map = inherited;
    if (!via_mpirun)
      for (const auto& [k, v] : ProcessEnvironment(options, world_process(p), master_port))
        env_map[k] = v;
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : env_map) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (std::string& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);

    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
      const std::string why = fmt::format(
          "cannot start process {} of {}: pipe: {}{}", p, options.processes, std::strerror(errno),
          errno == EMFILE || errno == ENFILE ? " (raise the open-file limit, ulimit -n)" : "");
      for (int fd : {out_pipe[0], out_pipe[1]})
        if (fd >= 0) ::close(fd);
      return abandon(why);
    }
    const pid_t pid = Spawn(executable, argv.data(), envp.data(), out_pipe[1], err_pipe[1], group);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    if (pid < 0) {
      ::close(out_pipe[0]);
      ::close(err_pipe[0]);
      return abandon(fmt::format(
          "cannot start {} (process {} of {}): {}{}", options.command[0], p, options.processes,
          std::strerror(-pid),
          -pid == EMFILE || -pid == ENFILE ? " (raise the open-file limit, ulimit -n)" : ""));
    }
    if (group == 0) {
      group = pid;
      reaper.Watch(group);
    }
    pids[static_cast<size_t>(p)] = pid;
    result.ends[static_cast<size_t>(p)] = {
        p,
        pid,
        false,
        0,
        false,
        -1,
        via_mpirun ? "mpirun" : fmt::format("rank {}", world_process(p))};
    const std::string label = prefix ? fmt::format("[rank {}] ", world_process(p)) : "";
    relays.emplace_back(Relay, out_pipe[0], options.output ? options.output : stdout, label,
                        std::ref(output_mu));
    relays.emplace_back(Relay, err_pipe[0], options.output ? options.output : stderr, label,
                        std::ref(output_mu));
  }

  // Watch: the first process that fails on its own stops the others; so do the timeout, a
  // request from the engine and a signal to Myriad.
  const auto start = std::chrono::steady_clock::now();
  int alive = spawned;
  int ended = 0;
  bool stopping = false;
  auto stop_all = [&](int signal) {
    for (int p = 0; p < spawned; ++p) {
      const pid_t pid = pids[static_cast<size_t>(p)];
      if (pid <= 0) continue;
      ProcessEnd& e = result.ends[static_cast<size_t>(p)];
      // One that already ended on its own keeps its own status as its cause.
      if (!e.stopped_by_myriad && HasEnded(pid)) continue;
      e.stopped_by_myriad = true;
      ::kill(pid, signal);
    }
    if (signal == SIGKILL && group > 0) ::kill(-group, SIGKILL);  // and what they started
  };
  auto stop_requested = start;
  bool term_pending = false;
  while (alive > 0) {
    bool changed = false;
    for (int p = 0; p < spawned; ++p) {
      pid_t& pid = pids[static_cast<size_t>(p)];
      if (pid <= 0) continue;
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) != pid) continue;
      ProcessEnd& e = result.ends[static_cast<size_t>(p)];
      e.exited = WIFEXITED(status);
      e.status = e.exited ? WEXITSTATUS(status) : WTERMSIG(status);
      e.order = ended++;
      pid = -1;
      --alive;
      changed = true;
      if (on_exit && via_mpirun) {
        // mpirun's end is the end of every process it started.
        for (int q = 0; q < options.processes; ++q) {
          ProcessEnd each = e;
          each.process = q;
          on_exit(each);
        }
      } else if (on_exit) {
        on_exit(e);
      }
      if (!stopping && (!e.exited || e.status != 0)) {
        stopping = true;
        stop_requested = std::chrono::steady_clock::now();
        stop_all(SIGTERM);
      }
    }
    const auto now = std::chrono::steady_clock::now();
    const bool asked = options.stop != nullptr && options.stop->load();
    const int signal = options.stop_signal != nullptr ? options.stop_signal->load() : 0;
    const bool timed_out =
        options.timeout_seconds > 0 &&
        std::chrono::duration<double>(now - start).count() > options.timeout_seconds;
    if (!stopping && (asked || timed_out || signal != 0)) {
      result.timed_out = timed_out && !asked && signal == 0;
      result.stopped_by_signal = asked ? 0 : signal;
      stopping = true;
      stop_requested = now;
      // Asked by the engine, which told the processes why: they get a moment to say so and
      // exit on their own before SIGTERM.
      if (asked) {
        term_pending = true;
      } else {
        stop_all(SIGTERM);
      }
    }
    const double since_stop = std::chrono::duration<double>(now - stop_requested).count();
    if (term_pending && since_stop > kToldGraceSeconds) {
      term_pending = false;
      stop_all(SIGTERM);
    }
    // Processes that ignore SIGTERM get SIGKILL two seconds later.
    if (stopping && since_stop > kToldGraceSeconds + 2.0) stop_all(SIGKILL);
    if (!changed) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (auto& t : relays) t.join();
  return result;
}

}  // namespace myriad::emulator
