// The hang watch of `myriad run` (docs/run.md, "Hangs"): a run in which nothing moves — no
// thread of the program does work on the CPU for a while of real time —
// is stuck where Myriad cannot see (a rendezvous store waiting for a worker that never comes,
// a socket, a bare futex). The watch reads the kernel's view of Myriad's process and all its
// descendants from /proc and names the waits it finds.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace myriad::emulator {

// A thread of the run asleep in a system call, as /proc shows it.
struct BlockedThread {
  pid_t pid = 0;
  pid_t tid = 0;
  std::string process;  // "rank 3" (its RANK), else its command name
  std::string thread;   // the thread's name (comm)
  std::string call;     // "recvfrom on a TCP socket to 127.0.0.1:29500", "futex wait"
};

class HangWatch {
 public:
  // Watches `root` (Myriad itself) and every process below it, every thread but Myriad's own
  // pollers, whose names start with "myriad-" (the shims' idle watch, the launcher's and the
  // watchdog's threads in `myriad`).
  // Without `count_root`, Myriad's own threads are not counted at all: only the run's processes.
  explicit HangWatch(pid_t root, bool count_root = true);

  // Reads /proc once. Returns whether the run is busy: a counted thread used at least
  // `busy_thread_ns` of CPU time since the last look. Not the sum over threads: a waiting
  // thread under Myriad's preload looks again every 20 ms (a few microseconds each), and a
  // process holds dozens of them; a thread doing work uses a good part of a core.
  bool Look(std::uint64_t busy_thread_ns);

  // The program's threads asleep in a system call now, each process's main thread first, in
  // pid order.
  std::vector<BlockedThread> Blocked() const;

 private:
  pid_t root_;
  bool count_root_;
  std::map<pid_t, std::uint64_t> cpu_ns_;  // by thread, at the last look
};

// One line naming where the run is stuck: "rank 0 (pid 42, python3): thread 42 (pt_main_thread)
// in recvfrom on a TCP socket to 127.0.0.1:29500; ...", at most `limit` processes, their
// main threads first.
std::string DescribeBlocked(const std::vector<BlockedThread>& threads, int limit = 4);

}  // namespace myriad::emulator
