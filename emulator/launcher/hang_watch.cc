#include "myriad/emulator/hang_watch.h"

#include <dirent.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

namespace myriad::emulator {
namespace {

// Threads of Myriad's own (the shims' idle watch and destructor thread, the launcher's and
// the watchdog's in `myriad` itself) poll on a timer: they are no sign of the program moving.
constexpr const char* kOwnThreadPrefix = "myriad-";
// Pollfd entries read from a process in poll(2), to name what it waits on.
constexpr std::size_t kPollFdsRead = 8;

std::string ReadSmall(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text;
  char buffer[4096];
  in.read(buffer, sizeof buffer);
  text.assign(buffer, static_cast<std::size_t>(in.gcount()));
  return text;
}

std::vector<pid_t> NumericEntries(const std::string& dir) {
  std::vector<pid_t> ids;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return ids;
  while (const dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long id = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && id > 0) ids.push_back(static_cast<pid_t>(id));
  }
  ::closedir(d);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// What /proc/.../stat says: the name, state, parent and CPU ticks.
struct Stat {
  std::string comm;
  char state = '?';
  pid_t ppid = 0;
  std::uint64_t cpu_ns = 0;
};

bool ReadStat(const std::string& dir, Stat* stat) {
  const std::string text = ReadSmall(dir + "/stat");
  const auto open = text.find('(');
  const auto close = text.rfind(')');  // the name may hold spaces and parentheses
  if (open == std::string::npos || close == std::string::npos || close + 2 >= text.size())
    return false;
  stat->comm = text.substr(open + 1, close - open - 1);
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  std::uint64_t ticks = 0;
  // Field 3 is the state, 4 the parent, 14 and 15 the user and system ticks.
  for (int n = 3; n <= 15 && fields >> field; ++n) {
    if (n == 3) stat->state = field[0];
    if (n == 4) stat->ppid = static_cast<pid_t>(std::strtol(field.c_str(), nullptr, 10));
    if (n >= 14) ticks += std::strtoull(field.c_str(), nullptr, 10);
  }
  stat->cpu_ns = ticks * (1'000'000'000ull / static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK)));
  // Finer where the kernel keeps it: nanoseconds on the CPU.
  const std::string schedstat = ReadSmall(dir + "/schedstat");
  if (!schedstat.empty()) stat->cpu_ns = std::strtoull(schedstat.c_str(), nullptr, 10);
  return true;
}

std::string TrimmedComm(const std::string& dir) {
  std::string comm = ReadSmall(dir + "/comm");
  while (!comm.empty() && (comm.back() == '\n' || comm.back() == '\0')) comm.pop_back();
  return comm;
}

bool OwnThread(const std::string& comm) { return comm.rfind(kOwnThreadPrefix, 0) == 0; }

// `root` and every process below it, in pid order.
std::vector<pid_t> ProcessTree(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  for (pid_t pid : NumericEntries("/proc")) {
    Stat stat;
    if (ReadStat("/proc/" + std::to_string(pid), &stat)) children[stat.ppid].push_back(pid);
  }
  std::vector<pid_t> tree = {root};
  for (std::size_t i = 0; i < tree.size(); ++i) {
    const auto it = children.find(tree[i]);
    if (it != children.end()) tree.insert(tree.end(), it->second.begin(), it->second.end());
  }
  std::sort(tree.begin(), tree.end());
  return tree;
}

// The process's RANK, if its environment has one ("" if not).
std::string RankOf(pid_t pid) {
  const std::string environ = ReadSmall("/proc/" + std::to_string(pid) + "/environ");
  for (std::size_t at = 0; at < environ.size();) {
    const std::size_t end = std::min(environ.find('\0', at), environ.size());
    if (environ.compare(at, 5, "RANK=") == 0) return environ.substr(at + 5, end - at - 5);
    at = end + 1;
  }
  return "";
}

// "127.0.0.1:29500" from /proc/net/tcp's little-endian hex "0100007F:7364".
std::string Ipv4Endpoint(const std::string& hex) {
  const auto colon = hex.find(':');
  if (colon != 8) return hex;
  const unsigned long address = std::strtoul(hex.substr(0, 8).c_str(), nullptr, 16);
  const unsigned long port = std::strtoul(hex.substr(9).c_str(), nullptr, 16);
  return fmt::format("{}.{}.{}.{}:{}", address & 0xff, (address >> 8) & 0xff,
                     (address >> 16) & 0xff, (address >> 24) & 0xff, port);
}

// What a socket's inode is, from the process's view of the network tables.
std::string DescribeSocket(pid_t pid, const std::string& inode) {
  const std::string net = "/proc/" + std::to_string(pid) + "/net/";
  for (const char* table : {"tcp", "tcp6"}) {
    std::ifstream in(net + table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, node;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> node;
      if (node != inode) continue;
      if (state == "0A") return "a TCP socket listening on " + Ipv4Endpoint(local);
      return "a TCP socket to " + Ipv4Endpoint(remote);
    }
  }
  std::ifstream in(net + "unix");
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string num, refs, protocol, flags, type, state, node, path;
    fields >> num >> refs >> protocol >> flags >> type >> state >> node >> path;
    if (node == inode) return path.empty() ? "a Unix socket" : "a Unix socket at " + path;
  }
  return "a socket";
}

std::string DescribeFd(pid_t pid, long fd) {
  char target[512];
  const std::string link = fmt::format("/proc/{}/fd/{}", pid, fd);
  const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  if (n <= 0) return fmt::format("file descriptor {}", fd);
  const std::string what(target, static_cast<std::size_t>(n));
  if (what.rfind("socket:[", 0) == 0) return DescribeSocket(pid, what.substr(8, what.size() - 9));
  if (what.rfind("pipe:[", 0) == 0) return "a pipe";
  if (what.rfind("anon_inode:", 0) == 0) return what.substr(11);
  return what;
}

// The first file descriptors of a poll(2) call's array, read from the waiting process.
std::string DescribePollFds(pid_t pid, unsigned long address, unsigned long count) {
  pollfd fds[kPollFdsRead];
  const std::size_t n = std::min<std::size_t>(count, kPollFdsRead);
  iovec local{fds, n * sizeof(pollfd)};
  iovec remote{reinterpret_cast<void*>(address), n * sizeof(pollfd)};
  if (n == 0 ||
      ::process_vm_readv(pid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(n * sizeof(pollfd)))
    return "";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    if (fds[i].fd < 0) continue;
    out += (out.empty() ? " on " : ", ") + DescribeFd(pid, fds[i].fd);
  }
  if (count > n) out += fmt::format(" and {} more", count - n);
  return out;
}

// The system call a thread sleeps in, from /proc/.../syscall ("NR ARG1 ... SP PC").
std::string DescribeCall(pid_t pid, const std::string& task_dir) {
  std::istringstream fields(ReadSmall(task_dir + "/syscall"));
  std::string nr_text;
  if (!(fields >> nr_text) || nr_text == "running") return "";
  const long nr = std::strtol(nr_text.c_str(), nullptr, 10);
  if (nr < 0) return "no system call (asleep in user space)";
  unsigned long args[6] = {};
  for (unsigned long& a : args) {
    std::string hex;
    if (fields >> hex) a = std::strtoul(hex.c_str(), nullptr, 16);
  }
  const auto on_fd = [&](const char* name) {
    return std::string(name) + " on " + DescribeFd(pid, static_cast<long>(args[0]));
  };
  switch (nr) {
    case SYS_read:
      return on_fd("read");
    case SYS_readv:
      return on_fd("readv");
    case SYS_write:
      return on_fd("write");
    case SYS_recvfrom:
      return on_fd("recvfrom");
    case SYS_recvmsg:
      return on_fd("recvmsg");
    case SYS_sendto:
      return on_fd("sendto");
    case SYS_sendmsg:
      return on_fd("sendmsg");
    case SYS_accept:
      return on_fd("accept");
    case SYS_accept4:
      return on_fd("accept4");
    case SYS_connect:
      return on_fd("connect");
#ifdef SYS_poll
    case SYS_poll:
      return "poll" + DescribePollFds(pid, args[0], args[1]);
#endif
    case SYS_ppoll:
      return "ppoll" + DescribePollFds(pid, args[0], args[1]);
#ifdef SYS_select
    case SYS_select:
      return "select";
#endif
    case SYS_pselect6:
      return "pselect6";
#ifdef SYS_epoll_wait
    case SYS_epoll_wait:
      return "epoll_wait";
#endif
    case SYS_epoll_pwait:
      return "epoll_pwait";
    case SYS_futex:
      return "futex wait (a lock, condition variable or atomic wait)";
    case SYS_wait4:
      return "wait4 (waiting for a child process)";
    case SYS_waitid:
      return "waitid (waiting for a child process)";
    case SYS_nanosleep:
      return "nanosleep (a real-time sleep)";
    case SYS_clock_nanosleep:
      return "clock_nanosleep (a real-time sleep)";
#ifdef SYS_pause
    case SYS_pause:
      return "pause";
#endif
    case SYS_rt_sigtimedwait:
      return "sigtimedwait";
    case SYS_flock:
      return "flock";
    case SYS_fcntl:
      return "fcntl (a file lock?)";
    default:
      return fmt::format("system call {}", nr);
  }
}

}  // namespace

HangWatch::HangWatch(pid_t root, bool count_root) : root_(root), count_root_(count_root) {}

bool HangWatch::Look(std::uint64_t busy_thread_ns) {
  std::map<pid_t, std::uint64_t> now;
  bool busy = cpu_ns_.empty();  // the first look has nothing to compare with
  for (pid_t pid : ProcessTree(root_)) {
    if (pid == root_ && !count_root_) continue;
    const std::string task = "/proc/" + std::to_string(pid) + "/task/";
    for (pid_t tid : NumericEntries(task)) {
      const std::string dir = task + std::to_string(tid);
      Stat stat;
      if (OwnThread(TrimmedComm(dir)) || !ReadStat(dir, &stat)) continue;
      now[tid] = stat.cpu_ns;
      const auto before = cpu_ns_.find(tid);
      const std::uint64_t since = before == cpu_ns_.end() ? 0 : before->second;
      if (stat.cpu_ns >= since + busy_thread_ns) busy = true;
    }
  }
  cpu_ns_ = std::move(now);
  return busy;
}

std::vector<BlockedThread> HangWatch::Blocked() const {
  std::vector<BlockedThread> blocked;
  const std::vector<pid_t> tree = ProcessTree(root_);
  // A process with a RANK whose children have one too is their launcher (a torchrun agent,
  // which has its node's RANK from Myriad): named by its command, not as a rank.
  std::set<pid_t> launchers;
  std::map<pid_t, std::string> ranks;
  for (pid_t pid : tree) {
    ranks[pid] = RankOf(pid);
    Stat stat;
    if (!ranks[pid].empty() && ReadStat("/proc/" + std::to_string(pid), &stat))
      launchers.insert(stat.ppid);
  }
  for (pid_t pid : tree) {
    if (pid == root_) continue;
    const std::string dir = "/proc/" + std::to_string(pid);
    const std::string command = TrimmedComm(dir);
    const std::string label =
        ranks[pid].empty() || launchers.count(pid)
            ? fmt::format("pid {} ({}{})", pid, command, launchers.count(pid) ? ", a launcher" : "")
            : fmt::format("rank {} (pid {}, {})", ranks[pid], pid, command);
    std::vector<pid_t> tids = NumericEntries(dir + "/task/");
    // The main thread first: what the program's own code waits in.
    std::stable_partition(tids.begin(), tids.end(), [pid](pid_t t) { return t == pid; });
    for (pid_t tid : tids) {
      const std::string task = dir + "/task/" + std::to_string(tid);
      Stat stat;
      const std::string comm = TrimmedComm(task);
      if (OwnThread(comm) || !ReadStat(task, &stat) || stat.state != 'S') continue;
      const std::string call = DescribeCall(pid, task);
      if (!call.empty()) blocked.push_back({pid, tid, label, comm, call});
    }
  }
  return blocked;
}

std::string DescribeBlocked(const std::vector<BlockedThread>& threads, int limit) {
  std::string out;
  std::set<pid_t> seen;  // each process by its first (main) thread
  int more = 0;
  for (const BlockedThread& t : threads) {
    if (!seen.insert(t.pid).second) continue;
    if (static_cast<int>(seen.size()) > limit) {
      ++more;
      continue;
    }
    if (!out.empty()) out += "; ";
    out += fmt::format("{}: thread {} ({}) in {}", t.process, t.tid, t.thread, t.call);
  }
  if (more > 0) out += fmt::format("; and {} more process{}", more, more == 1 ? "" : "es");
  return out.empty() ? "no thread of the program is in a system call" : out;
}

}  // namespace myriad::emulator
