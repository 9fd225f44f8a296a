#include "cudart/client.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "protocol/client.h"

namespace myriad::shim {
namespace {

// Flush when a batch gets this long: well under the protocol's frame limit.
constexpr std::size_t kMaxBatch = 512;

std::uint64_t EnvU64(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// CUDA_VISIBLE_DEVICES as CUDA reads it: a comma-separated list of device indices, cut at the
// first entry that is not a device (or repeats one); unset: every device. UUIDs and MIG
// names are not devices Myriad has, so they end the list too.
std::vector<int> VisibleDevices(const char* value, int node_devices) {
  std::vector<int> devices;
  if (value == nullptr) {
    for (int d = 0; d < node_devices; ++d) devices.push_back(d);
    return devices;
  }
  const char* p = value;
  while (*p) {
    while (*p == ' ') ++p;
    char* end = nullptr;
    const long d = std::strtol(p, &end, 10);
    if (end == p || d < 0 || d >= node_devices ||
        std::find(devices.begin(), devices.end(), static_cast<int>(d)) != devices.end())
      break;
    devices.push_back(static_cast<int>(d));
    p = end;
    while (*p == ' ') ++p;
    if (*p != ',') break;
    ++p;
  }
  return devices;
}

// libc's own pthread_mutex_lock/unlock, looked up in libc itself: the preload library's
// wrappers (which the global lookup finds first) would call back into the shim.
using MutexCall = int (*)(pthread_mutex_t*);
struct LibcMutex {
  MutexCall lock, unlock;
};
const LibcMutex& Libc() {
  static const LibcMutex libc = [] {
    void* handle = ::dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    LibcMutex m{reinterpret_cast<MutexCall>(::dlsym(handle, "pthread_mutex_lock")),
                reinterpret_cast<MutexCall>(::dlsym(handle, "pthread_mutex_unlock"))};
    if (!m.lock || !m.unlock) std::abort();  // not glibc: nothing here would work
    return m;
  }();
  return libc;
}

}  // namespace

void RawMutex::lock() { Libc().lock(&m_); }
void RawMutex::unlock() { Libc().unlock(&m_); }

namespace {

// Captures in progress, by (device, stream); streams joined through events share one.
struct Capture {
  std::pair<int, std::int32_t>
      origin;  // the stream that began it: its id and graph are the capture's
  std::vector<CapturedOp> ops;
};
RawMutex capture_mu;
std::map<std::pair<int, std::int32_t>, std::shared_ptr<Capture>>& Capturing() {
  static auto* captures = new std::map<std::pair<int, std::int32_t>, std::shared_ptr<Capture>>();
  return *captures;
}
// Events recorded inside a capture: a stream that waits on one joins that capture.
std::map<std::pair<int, std::int32_t>, std::shared_ptr<Capture>>& CapturedEvents() {
  static auto* events = new std::map<std::pair<int, std::int32_t>, std::shared_ptr<Capture>>();
  return *events;
}

struct ThreadState {
  wire::Client client;
  bool connected = false;
  bool broken = false;
  std::uint32_t index = 0;
  int device = 0;
  // Its virtual clock: written by the thread (or by a waker while it waits), read by others.
  std::atomic<std::int64_t> clock_ps{0};
  std::int64_t cpu_ns = -1;  // the thread's CPU time at its previous call (measured host time)
  std::unordered_map<std::string, std::uint32_t> names;
  std::vector<std::string> names_by_id{""};
  std::vector<std::pair<std::uint32_t, std::string>> new_names;
  std::vector<wire::WireOp> batch;
  int batch_device = -1;
  // Ops enqueued so far, and of those sent: another thread that takes what this one let go of
  // must have its work come after the ops enqueued before (OrderAfter).
  std::atomic<std::uint64_t> appended{0};
  std::atomic<std::uint64_t> sent{0};
  // Threads (by index) whose first N ops what this thread sends next must come after, and
  // the positions already promised (under mu).
  std::map<std::uint32_t, std::uint64_t> pending_after;
  std::map<std::uint32_t, std::uint64_t> ordered_after;
  RawMutex mu;  // guards the connection and the batch: held across a call's round trip
  // Host state, as last reported to Myriad (reports are numbered by `version`), under
  // host_mu, which is never held across I/O, so other threads may look at any time.
  RawMutex host_mu;
  std::uint32_t version = 0;
  // The version of the report that last said it runs (its creation, a wake, a resume): its
  // batches must not be taken before Myriad has that report (OpsHeader::state_version).
  std::uint32_t running_version = 0;
  bool blocked = false;  // waits on the host; another thread may wake it
  wire::HostState wait = wire::HostState::kBlocked;  // how, while blocked
  // What it polled (event and stream queries: kind, device, id) and found not ready since its
  // clock last moved and it last did anything else: polling one again is a loop's
  // (wire::kRepeatedPoll). Under mu.
  std::vector<std::array<std::int64_t, 3>> polled;
  std::int64_t polled_at = -1;
  // While in a timed wait: its virtual deadline, which a waker cannot push it past (-1: none).
  std::int64_t deadline = -1;
  bool exited = false;
  // The kernel's id of the thread it is (set in the thread itself), for the idle watch.
  std::atomic<int> tid{0};
};

// Set at the process's first CUDA call that reaches Myriad: its host clocks are virtual from
// then on, starting from the real readings taken then (ns; realtime, monotonic).
std::atomic<bool> process_started{false};
std::atomic<std::int64_t> start_ns[2] = {-1, -1};
// Marks the process started; true for the one caller that did (it reports the threads).
bool MarkStarted() {
  if (process_started.load(std::memory_order_acquire)) return false;
  for (int realtime = 0; realtime < 2; ++realtime) {
    timespec ts{};
    // The syscall itself: clock_gettime is the preload's, which would ask us.
    ::syscall(SYS_clock_gettime, realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC, &ts);
    std::int64_t expected = -1;
    start_ns[realtime].compare_exchange_strong(
        expected, static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec);
  }
  bool expected = false;
  return process_started.compare_exchange_strong(expected, true, std::memory_order_acq_rel);
}
// The thread a new thread adopts (made by its creator), set in the new thread first thing.
thread_local ThreadState* adopted = nullptr;

std::atomic<std::uint32_t> next_thread{0};
// The latest virtual time any thread of this process has been told: where new threads start.
std::atomic<std::int64_t> process_time{0};

RawMutex registry_mu;
std::vector<ThreadState*>& Registry() {
  static auto* threads = new std::vector<ThreadState*>();  // lives until the process ends
  return *threads;
}

// Myriad stopped the run (or died): nothing this process does can be timed any more. Says
// why when Myriad sent a reason before it closed the connection (`fatal`, if already read).
[[noreturn]] void RunEnded(ThreadState& t, std::string fatal = {}) {
  wire::Reply r;
  while (fatal.empty() && t.client.ReadReply(r, &fatal)) {
  }  // replies still in flight come before the reason
  std::fprintf(stderr, "myriad: the run ended%s%s\n", fatal.empty() ? "" : ": ", fatal.c_str());
  std::fflush(nullptr);  // what the program printed before is part of what it said
  std::_Exit(1);
}

bool Connected(ThreadState& t) {
  if (!t.connected) {
    const Settings& s = GetSettings();
    if (t.broken || !s.under_myriad || !t.client.Connect(s.socket) ||
        !t.client.SendHello(s.process, s.node_devices, s.descendant)) {
      if (!t.broken)
        std::fprintf(stderr, "myriad: cannot reach myriad at '%s': %s\n", s.socket.c_str(),
                     std::strerror(errno));
      t.broken = true;
      return false;
    }
    t.connected = true;
  }
  return true;
}

bool SendBatch(ThreadState& t) {
  // A thread with nothing to send does not connect (the exit-time flush visits every thread
  // that touched the shims).
  if (t.batch.empty()) return true;
  if (!Connected(t)) return false;
  // What it must come after goes first, on the same connection.
  for (const auto& [thread, ops] : t.pending_after)
    if (!t.client.SendOrder(t.index, thread, ops)) RunEnded(t);
  t.pending_after.clear();
  if (!t.new_names.empty()) {
    if (!t.client.SendNames(t.new_names)) RunEnded(t);
    t.new_names.clear();
  }
  // Myriad knows devices by their index on the node, not by this process's ordinals.
  const Settings& s = GetSettings();
  const int node_device = t.batch_device >= 0 && t.batch_device < s.devices
                              ? s.node_device[static_cast<size_t>(t.batch_device)]
                              : t.batch_device;
  std::uint32_t state_version = 0;
  {
    std::lock_guard<RawMutex> host(t.host_mu);
    state_version = t.running_version;
  }
  const std::uint64_t appended = t.appended.load();
  if (!t.client.SendOps(node_device, t.batch.data(), static_cast<std::uint32_t>(t.batch.size()),
                        t.index, t.clock_ps.load(), state_version, appended))
    RunEnded(t);
  t.batch.clear();
  t.sent = appended;
  return true;
}

std::vector<ThreadState*> Threads() {
  std::lock_guard<RawMutex> lock(registry_mu);
  return Registry();
}

// How many times the process's CUDA calls returned each error (by code), for the report.
constexpr int kErrorCodes = 1024;  // cudaError_t values run to cudaErrorUnknown (999)
std::atomic<std::uint32_t> error_counts[kErrorCodes];

// At exit: the errors go over the first thread that talks to Myriad.
void SendErrors(ThreadState& t) {
  std::vector<std::pair<std::uint32_t, std::string>> errors;
  for (int code = 0; code < kErrorCodes; ++code)
    if (const std::uint32_t n = error_counts[code].load(); n > 0)
      errors.emplace_back(n, cudaGetErrorName(static_cast<cudaError_t>(code)));
  if (!errors.empty()) t.client.SendErrors(errors);
}

void FlushAll() {
  // A copy: a thread holding its own lock may be reading the registry (Start's report).
  bool errors_sent = false;
  for (ThreadState* t : Threads()) {
    std::lock_guard<RawMutex> thread_lock(t->mu);
    SendBatch(*t);
    if (!errors_sent && t->connected && !t->broken) {
      SendErrors(*t);
      errors_sent = true;
    }
  }
}

ThreadState* NewThread(std::int64_t clock) {
  auto* t = new ThreadState();  // kept for the exit-time flush; a thread's state is small
  t->index = next_thread.fetch_add(1);
  t->clock_ps = clock;
  std::lock_guard<RawMutex> lock(registry_mu);
  if (Registry().empty()) std::atexit(FlushAll);
  Registry().push_back(t);
  return t;
}

ThreadState& State() {
  // A thread the preload's pthread_create made adopts the state its creator announced.
  thread_local ThreadState* state = [] {
    ThreadState* s = adopted ? adopted : NewThread(process_time.load());
    s->tid = static_cast<int>(::syscall(SYS_gettid));
    return s;
  }();
  return *state;
}

// Reports `target`'s host state to Myriad over `sender`'s connection (sender.mu held), so it
// arrives before anything `sender` sends later. `target`'s version orders the reports.
void Report(ThreadState& sender, ThreadState& target, wire::HostState state, std::int64_t time,
            std::uint32_t version) {
  // Before its first CUDA call a process says nothing (a launcher such as torchrun, a shell,
  // a compile worker that never uses CUDA must not join the run): its threads' states are
  // kept and reported together when it starts (Started).
  if (!process_started.load(std::memory_order_acquire)) return;
  const Settings& s = GetSettings();
  if (!s.under_myriad || !Connected(sender)) return;
  wire::ThreadState report;
  report.thread = target.index;
  report.version = version;
  report.state = state;
  report.time = time;
  if (!sender.client.SendThread(report)) RunEnded(sender);
}

// Under target.host_mu: the next version of a report about it.
std::uint32_t NextVersion(ThreadState& target) { return ++target.version; }

// Moves a clock to `at` if that is later (clocks never go back).
void Raise(std::atomic<std::int64_t>& clock, std::int64_t at) {
  std::int64_t seen = clock.load();
  while (seen < at && !clock.compare_exchange_weak(seen, at)) {
  }
}
void RaiseClock(ThreadState& t, std::int64_t at) { Raise(t.clock_ps, at); }

// A thread that reported waiting runs again: the version of the report that says so, or 0
// when it was not waiting (a waker may already have said it runs).
std::uint32_t MarkRunning(ThreadState& t) {
  std::lock_guard<RawMutex> host(t.host_mu);
  if (!t.blocked) return 0;
  t.blocked = false;
  t.deadline = -1;  // a timed wait it ended itself (a semaphore it took)
  return t.running_version = NextVersion(t);
}

// Records `op` if its stream is capturing (or joins a capture through an event); true if so.
bool Captured(ThreadState& t, const wire::WireOp& op, int device) {
  constexpr std::uint8_t kEventRecordKind = 3, kStreamWaitEventKind = 4;
  std::lock_guard<RawMutex> lock(capture_mu);
  if (Capturing().empty()) return false;
  const auto key = std::make_pair(device, op.stream);
  auto it = Capturing().find(key);
  if (it == Capturing().end() && op.kind == kStreamWaitEventKind) {
    auto joined = CapturedEvents().find({device, op.event});
    if (joined == CapturedEvents().end()) return false;
    it = Capturing().emplace(key, joined->second).first;
  }
  if (it == Capturing().end()) return false;
  if (op.kind == kEventRecordKind) CapturedEvents()[{device, op.event}] = it->second;
  const auto name = [&t](std::uint32_t id) {
    return id < t.names_by_id.size() ? t.names_by_id[id] : std::string();
  };
  it->second->ops.push_back({op, name(op.name), name(op.comm)});
  return true;
}

// With measured host time, the CPU time the thread spent since its previous call moves its
// clock; the engine adds each call's own modelled cost.
void AdvanceClock(ThreadState& t) {
  const Settings& s = GetSettings();
  if (!s.measure_host_time) return;
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  const std::int64_t now = static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  if (t.cpu_ns >= 0)
    t.clock_ps +=
        static_cast<std::int64_t>(static_cast<double>(now - t.cpu_ns) * 1000.0 * s.host_time_scale);
  t.cpu_ns = now;
}

// --- The idle watch: threads asleep in waits the preload does not see.
//
// A thread that sleeps in a bare futex (OpenMP's and Rayon's thread pools between parallel
// regions, std::atomic::wait, C++20 barriers) or in waitpid never tells Myriad it waits, so
// Myriad would hold virtual time at its clock for ever: a program whose CPU ops once ran on
// OpenMP threads then hangs at its next CUDA synchronisation. A watcher thread of the shim's
// own (made with glibc's pthread_create, unseen by the preload) looks at the process's
// threads every kIdleScanNs of real time; one that the kernel shows asleep, with no CPU time
// used, over kIdleScans looks in a row, and that is not inside a call to Myriad (its
// connection's lock is free) and not in a wait Myriad knows, is reported waiting outside
// Myriad's view: it holds no virtual time and resumes at its own clock when it next calls in
// (as a thread spinning in sched_yield does). docs/run.md, "Host threads".
constexpr long kIdleScanNs = 10'000'000;
constexpr int kIdleScans = 2;
void ReportWaitLocked(ThreadState& t, wire::HostState state);  // below

// The thread's scheduler state letter and CPU time (ns) from /proc, by system calls alone
// (the preload wraps open and read, which would make this thread one of the process's).
bool TaskState(int tid, char* state, std::uint64_t* cpu_ns) {
  const auto read_file = [](const char* path, char* buffer, std::size_t size) -> long {
    const long fd = ::syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    const long n = ::syscall(SYS_read, fd, buffer, size - 1);
    ::syscall(SYS_close, fd);
    if (n >= 0) buffer[n] = '\0';
    return n;
  };
  char path[64], buffer[512];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  if (read_file(path, buffer, sizeof buffer) <= 0) return false;
  const char* end = std::strrchr(buffer, ')');  // the name may hold spaces and parentheses
  if (!end || end[1] != ' ' || !end[2]) return false;
  *state = end[2];
  // Field 14 and 15 (utime, stime, in clock ticks) follow the state (field 3).
  const char* at = end + 2;
  unsigned long long ticks = 0;
  for (int field = 3; field < 16 && at; ++field) {
    if (field >= 14) ticks += std::strtoull(at, nullptr, 10);
    at = std::strchr(at, ' ');
    if (at) ++at;
  }
  *cpu_ns = ticks * 10'000'000ull;
  // Finer: the time on CPU the scheduler counts (schedstat), where the kernel keeps it.
  std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
  if (read_file(path, buffer, sizeof buffer) > 0) *cpu_ns = std::strtoull(buffer, nullptr, 10);
  return true;
}

void* WatchIdleThreads(void*) {
  // Named so that `myriad run`'s hang watch does not take its polling for the program's work.
  ::prctl(PR_SET_NAME, "myriad-idle", 0, 0, 0);
  std::unordered_map<ThreadState*, std::pair<std::uint64_t, int>> seen;  // CPU time, idle looks
  for (;;) {
    const timespec period{0, kIdleScanNs};
    ::syscall(SYS_nanosleep, &period, nullptr);
    for (ThreadState* t : Threads()) {
      const int tid = t->tid.load();
      bool known_wait = false;
      {
        std::lock_guard<RawMutex> host(t->host_mu);
        known_wait = t->blocked || t->exited;
      }
      char state = 0;
      std::uint64_t cpu = 0;
      if (tid <= 0 || known_wait || !TaskState(tid, &state, &cpu)) {
        seen.erase(t);
        continue;
      }
      auto& [last_cpu, idle] = seen[t];
      if (state != 'S' || cpu != last_cpu) {
        last_cpu = cpu;
        idle = 0;
        continue;
      }
      if (++idle < kIdleScans) continue;
      idle = 0;
      if (!t->mu.try_lock()) continue;  // in a call to Myriad: waiting for its answer
      bool still_running = false;
      {
        std::lock_guard<RawMutex> host(t->host_mu);
        still_running = !t->blocked && !t->exited;
      }
      if (still_running && SendBatch(*t)) ReportWaitLocked(*t, wire::HostState::kOutside);
      t->mu.unlock();
    }
  }
  return nullptr;
}

// Starts `body` on a thread of the shim's own, made with glibc's pthread_create (looked up in
// libc itself): the preload's wrapper would make it one of the program's threads, with a
// clock of its own. False if it could not start.
bool StartShimThread(void* (*body)(void*)) {
  using Create = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  void* libc = ::dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  const auto create = libc ? reinterpret_cast<Create>(::dlsym(libc, "pthread_create")) : nullptr;
  if (!create) return false;
  pthread_t thread;
  if (create(&thread, nullptr, body, nullptr) != 0) return false;
  ::pthread_detach(thread);
  return true;
}

void StartIdleWatch() { StartShimThread(WatchIdleThreads); }

// --- Work run apart from the program's threads (CUDA's internal thread for user objects'
// destructors): in the order given, woken through a bare futex the preload does not see.
RawMutex detached_mu;
std::vector<std::pair<void (*)(void*), void*>>& DetachedWork() {
  static auto* work = new std::vector<std::pair<void (*)(void*), void*>>();
  return *work;
}
std::atomic<std::uint32_t> detached_posted{0};

void* RunDetachedWork(void*) {
  for (;;) {
    const std::uint32_t seen = detached_posted.load();
    std::vector<std::pair<void (*)(void*), void*>> work;
    {
      std::lock_guard<RawMutex> lock(detached_mu);
      work.swap(DetachedWork());
    }
    for (const auto& [fn, arg] : work) fn(arg);
    if (work.empty())
      ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&detached_posted), FUTEX_WAIT_PRIVATE,
                seen, nullptr, nullptr, 0);
  }
  return nullptr;
}

// The process's first CUDA call, by `t` (t.mu held): clocks become virtual, and Myriad
// hears every other thread's state as it stands (each report numbered as it would have been).
void Start(ThreadState& t) {
  if (!MarkStarted()) return;
  StartIdleWatch();
  for (ThreadState* other : Threads()) {
    wire::HostState state = wire::HostState::kRunning;
    std::uint32_t version = 0;
    {
      std::lock_guard<RawMutex> host(other->host_mu);
      version = other->version;
      if (other->exited)
        state = wire::HostState::kExited;
      else if (other->blocked)
        state = other->wait;
    }
    if (version != 0) Report(t, *other, state, other->clock_ps.load(), version);
  }
}

// Event and stream queries.
constexpr std::uint8_t kEventQueryKind = 6;
bool IsPoll(const wire::WireOp& op) {
  return op.kind == kEventQueryKind ||
         op.kind == static_cast<std::uint8_t>(wire::WireKind::kStreamQuery);
}

int SubmitLocked(ThreadState& t, const wire::WireOp& op, int device) {
  Start(t);
  if (!IsPoll(op)) t.polled.clear();  // it did something else: a later poll is a first look
  // A thread that said it waits outside (it yielded in a spin loop) runs again: Myriad must
  // hold time for it before its ops can arrive.
  if (const std::uint32_t resumed = MarkRunning(t); resumed != 0)
    Report(t, t, wire::HostState::kRunning, t.clock_ps.load(), resumed);
  if (Captured(t, op, device)) return cudaSuccess;
  AdvanceClock(t);
  if (t.batch_device != device && !t.batch.empty() && !SendBatch(t)) return cudaErrorUnknown;
  t.batch_device = device;
  t.batch.push_back(op);
  ++t.appended;
  t.batch.back().host_ps = t.clock_ps.load();
  if (t.batch.size() >= kMaxBatch && !SendBatch(t)) return cudaErrorUnknown;
  return cudaSuccess;
}

}  // namespace

const Settings& GetSettings() {
  // Never destroyed: the exit-time flush reads it after static destructors may have run.
  static const Settings& settings = *[] {
    auto* made = new Settings();
    Settings& s = *made;
    const char* socket = std::getenv("MYRIAD_SOCKET");
    s.under_myriad = socket && *socket;
    if (s.under_myriad) s.socket = socket;
    // Started by mpirun, a process learns its index from Open MPI.
    s.process = static_cast<int>(
        EnvU64("MYRIAD_PROCESS", EnvU64("OMPI_COMM_WORLD_RANK", EnvU64("PMIX_RANK", 0))));
    s.node_devices = std::max(1, static_cast<int>(EnvU64("MYRIAD_DEVICES", 1)));
    s.node = static_cast<int>(EnvU64("MYRIAD_NODE", 0));
    // Started by the process `myriad run` started (preload/output.cc marks that one).
    const std::uint64_t launched = EnvU64("MYRIAD_LAUNCHED_PID", 0);
    s.descendant = launched != 0 && launched != static_cast<std::uint64_t>(::getpid());
    s.identity = s.process;
    if (s.descendant) {
      const char* rank = std::getenv("RANK");
      const unsigned long own =
          rank && *rank ? std::strtoul(rank, nullptr, 10) : static_cast<unsigned long>(::getpid());
      s.identity = 0x40000000 | static_cast<int>(own & 0x3fffffff);
    }
    s.node_device = VisibleDevices(std::getenv("CUDA_VISIBLE_DEVICES"), s.node_devices);
    s.devices = static_cast<int>(s.node_device.size());
    const char* host_time = std::getenv("MYRIAD_HOST_TIME");
    s.measure_host_time = host_time && std::strcmp(host_time, "measured") == 0;
    if (const char* scale = std::getenv("MYRIAD_HOST_TIME_SCALE"))
      s.host_time_scale = std::atof(scale);
    const char* clock = std::getenv("MYRIAD_HOST_CLOCK");
    s.virtual_clock = !(clock && std::strcmp(clock, "real") == 0);
    if (const char* name = std::getenv("MYRIAD_GPU_NAME")) s.gpu_name = name;
    s.gpu_memory = EnvU64("MYRIAD_GPU_MEMORY", s.gpu_memory);
    s.gpu_sms = static_cast<int>(EnvU64("MYRIAD_GPU_SMS", static_cast<std::uint64_t>(s.gpu_sms)));
    s.gpu_major = static_cast<int>(EnvU64("MYRIAD_GPU_MAJOR", 9));
    s.gpu_minor = static_cast<int>(EnvU64("MYRIAD_GPU_MINOR", 0));
    return made;
  }();
  return settings;
}

int CurrentDevice() { return State().device; }
void SetCurrentDevice(int device) { State().device = device; }

int Submit(const wire::WireOp& op, int device) {
  ThreadState& t = State();
  std::lock_guard<RawMutex> lock(t.mu);
  return SubmitLocked(t, op, device < 0 ? t.device : device);
}

int Call(const wire::WireOp& op, int device, wire::Reply* reply) {
  ThreadState& t = State();
  std::lock_guard<RawMutex> lock(t.mu);
  const int on = device < 0 ? t.device : device;
  if (IsCapturing(on, op.stream))
    return cudaErrorStreamCaptureUnsupported;  // nothing may wait on a capturing stream
  wire::WireOp waiting = op;
  waiting.flags = static_cast<std::uint8_t>(waiting.flags | wire::kWantsReply);
  // A poll moves the thread's clock on only when it repeats one (a polling loop): a thread
  // that looks once (PyTorch's watchdog) stays at its clock, whenever in real time it looks.
  const bool poll = IsPoll(op);
  const std::array<std::int64_t, 3> polled = {op.kind, on,
                                              op.kind == kEventQueryKind ? op.event : op.stream};
  if (poll && t.polled_at == t.clock_ps.load() &&
      std::find(t.polled.begin(), t.polled.end(), polled) != t.polled.end())
    waiting.flags = static_cast<std::uint8_t>(waiting.flags | wire::kRepeatedPoll);
  if (SubmitLocked(t, waiting, on) != cudaSuccess || !SendBatch(t)) return cudaErrorUnknown;
  wire::Reply r;
  std::string fatal;
  if (!t.client.ReadReply(r, &fatal)) RunEnded(t, std::move(fatal));
  RaiseClock(t, r.host_time_ps);
  Raise(process_time, t.clock_ps.load());
  if (poll && r.status == 0 && r.value == 0) {
    if (t.polled_at != t.clock_ps.load()) t.polled.clear();
    t.polled_at = t.clock_ps.load();
    if (t.polled.size() < 64) t.polled.push_back(polled);
  }
  if (reply) *reply = r;
  return r.status;
}

void Flush() {
  ThreadState& t = State();
  std::lock_guard<RawMutex> lock(t.mu);
  SendBatch(t);
}

std::uint32_t Intern(const std::string& name) {
  ThreadState& t = State();
  std::lock_guard<RawMutex> lock(t.mu);
  auto it = t.names.find(name);
  if (it != t.names.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(t.names.size() + 1);  // 0 means "no name"
  t.names.emplace(name, id);
  t.names_by_id.push_back(name);
  t.new_names.emplace_back(id, name);
  return id;
}

std::string NameOf(std::uint32_t id) {
  ThreadState& t = State();
  std::lock_guard<RawMutex> lock(t.mu);
  return id < t.names_by_id.size() ? t.names_by_id[id] : std::string();
}

bool BeginCapture(int device, std::int32_t stream) {
  std::lock_guard<RawMutex> lock(capture_mu);
  auto capture = std::make_shared<Capture>();
  capture->origin = {device, stream};
  return Capturing().emplace(std::make_pair(device, stream), std::move(capture)).second;
}

bool EndCapture(int device, std::int32_t stream, std::vector<CapturedOp>* ops) {
  std::lock_guard<RawMutex> lock(capture_mu);
  auto it = Capturing().find({device, stream});
  if (it == Capturing().end()) return false;
  const std::shared_ptr<Capture> capture = it->second;
  *ops = std::move(capture->ops);
  // Every stream that joined the capture leaves it; so do its events.
  for (auto& captures : {&Capturing(), &CapturedEvents()})
    for (auto c = captures->begin(); c != captures->end();)
      c = c->second == capture ? captures->erase(c) : std::next(c);
  return true;
}

bool IsCapturing(int device, std::int32_t stream) {
  std::lock_guard<RawMutex> lock(capture_mu);
  return Capturing().count({device, stream}) > 0;
}

void RunDetached(void (*fn)(void*), void* arg) {
  static const bool started = StartShimThread(RunDetachedWork);
  if (!started) {  // no thread to run it on: run it here, as before
    fn(arg);
    return;
  }
  {
    std::lock_guard<RawMutex> lock(detached_mu);
    DetachedWork().emplace_back(fn, arg);
  }
  ++detached_posted;
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&detached_posted), FUTEX_WAKE_PRIVATE, 1,
            nullptr, nullptr, 0);
}

bool CaptureOrigin(int device, std::int32_t stream, int* origin_device,
                   std::int32_t* origin_stream) {
  std::lock_guard<RawMutex> lock(capture_mu);
  const auto it = Capturing().find({device, stream});
  if (it == Capturing().end()) return false;
  *origin_device = it->second->origin.first;
  *origin_stream = it->second->origin.second;
  return true;
}

std::int64_t ThreadTime() { return State().clock_ps.load(); }

void* ThreadCreated() {
  ThreadState& creator = State();
  ThreadState* child = NewThread(creator.clock_ps.load());
  std::uint32_t version = 0;
  {
    std::lock_guard<RawMutex> lock(child->host_mu);
    version = child->running_version = NextVersion(*child);
  }
  std::lock_guard<RawMutex> lock(creator.mu);
  Report(creator, *child, wire::HostState::kRunning, child->clock_ps.load(), version);
  return child;
}

void ThreadAdopt(void* handle) {
  adopted = static_cast<ThreadState*>(handle);
  if (adopted) adopted->tid = static_cast<int>(::syscall(SYS_gettid));
}

void ThreadExited(void* handle) {
  auto& t = *static_cast<ThreadState*>(handle);
  std::uint32_t version = 0;
  {
    std::lock_guard<RawMutex> lock(t.host_mu);
    t.exited = true;
    version = NextVersion(t);
  }
  std::lock_guard<RawMutex> lock(t.mu);
  SendBatch(t);
  Report(t, t, wire::HostState::kExited, t.clock_ps.load(), version);
}

void* ThreadSelf() { return &State(); }

int ThreadEnded(void* handle) {
  auto& t = *static_cast<ThreadState*>(handle);
  std::lock_guard<RawMutex> lock(t.host_mu);
  return t.exited ? 1 : 0;
}

std::int64_t ThreadClock(void* handle) {
  return static_cast<ThreadState*>(handle)->clock_ps.load();
}

namespace {
// Under t.mu, its batch sent: the thread says it waits (in `state`).
void ReportWaitLocked(ThreadState& t, wire::HostState state) {
  std::uint32_t version = 0;
  {
    std::lock_guard<RawMutex> host(t.host_mu);
    t.blocked = true;
    t.wait = state;
    t.deadline = -1;
    version = NextVersion(t);
  }
  Report(t, t, state, t.clock_ps.load(), version);
}
void Block(wire::HostState state) {
  ThreadState& t = State();
  std::lock_guard<RawMutex> lock(t.mu);
  SendBatch(t);  // what it enqueued before it waits is Myriad's to run meanwhile
  ReportWaitLocked(t, state);
}
}  // namespace

void HostBlock() { Block(wire::HostState::kBlocked); }
void HostWaitOutside() {
  ThreadState& t = State();
  {
    std::lock_guard<RawMutex> host(t.host_mu);
    if (t.blocked) return;  // already waiting (a spinning thread yields over and over)
  }
  Block(wire::HostState::kOutside);
}

void HostResume(std::int64_t at) {
  ThreadState& t = State();
  RaiseClock(t, at);
  const std::uint32_t version = MarkRunning(t);
  if (version == 0) return;
  std::lock_guard<RawMutex> lock(t.mu);
  Report(t, t, wire::HostState::kRunning, t.clock_ps.load(), version);
}

int Exchange(ClientTable::DataCall* calls, int n) {
  ThreadState& t = State();
  int status = 0, waiting = 0;
  std::lock_guard<RawMutex> lock(t.mu);
  SendBatch(t);  // its ops first: the peers' may wait on them
  if (!Connected(t)) return 1;
  // Myriad holds no virtual time for the thread while it waits (a peer may first need this
  // thread's GPU to get further: a rank that synchronises before its matching call); it
  // resumes at the latest member's clock, which no virtual time has passed.
  const auto read_answer = [&] {
    wire::DataReply reply;
    std::string bytes, fatal;
    if (!t.client.ReadData(reply, &bytes, &fatal)) RunEnded(t, std::move(fatal));
    --waiting;
    RaiseClock(t, reply.time_ps);
    if (reply.tag >= static_cast<std::uint32_t>(n)) {
      status = 1;
      return;
    }
    ClientTable::DataCall& c = calls[reply.tag];
    if (reply.status != 0 || bytes.size() != c.recv_bytes)
      status = 1;
    else if (c.recv_bytes > 0)
      std::memcpy(c.recv, bytes.data(), c.recv_bytes);
  };
  // Answers already there (a group's earlier calls) are read between sends, so that neither
  // side fills the socket while the other writes (a group of a thousand broadcasts).
  const auto answer_waiting = [&] {
    pollfd p{t.client.fd(), POLLIN, 0};
    return ::syscall(SYS_poll, &p, 1, 0) > 0;  // the system call: the preload's would report
  };
  for (int i = 0; i < n; ++i) {
    calls[i].header.tag = static_cast<std::uint32_t>(i);
    calls[i].header.thread = t.index;
    calls[i].header.time_ps = t.clock_ps.load();
    if (!t.client.SendData(calls[i].header, calls[i].comm, calls[i].send)) RunEnded(t);
    waiting += calls[i].header.kind != wire::DataKind::kSend;
    while (waiting > 0 && answer_waiting()) read_answer();
  }
  while (waiting > 0) read_answer();
  Raise(process_time, t.clock_ps.load());
  return status;
}

void HostWake(void* handle, std::int64_t at) {
  auto& target = *static_cast<ThreadState*>(handle);
  ThreadState& waker = State();
  if (&target == &waker) return;
  std::uint32_t version = 0;
  {
    std::lock_guard<RawMutex> host(target.host_mu);
    if (!target.blocked) return;
    // A timed wait ends at its deadline if the wake comes no earlier, in virtual time: the
    // outcome must not depend on which came first in real time.
    std::int64_t resume = std::max(at, waker.clock_ps.load());
    if (target.deadline >= 0) resume = std::min(resume, target.deadline);
    RaiseClock(target, resume);
    target.blocked = false;
    version = target.running_version = NextVersion(target);
  }
  std::lock_guard<RawMutex> lock(waker.mu);
  // What the waker enqueued comes before what the woken thread enqueues next (PyTorch's
  // autograd thread launches the backward, then wakes the main thread, which synchronises).
  SendBatch(waker);
  Report(waker, target, wire::HostState::kRunning, target.clock_ps.load(), version);
}

std::uint64_t OpsEnqueued() { return State().appended.load(); }

void CountError(int code) {
  if (code > 0 && code < kErrorCodes && code != cudaErrorNotReady) ++error_counts[code];
}

namespace {

// Module ids, process-wide, in load order from 1; past what WireOp::module holds a module
// gets none (its launches are matched by name).
std::atomic<std::uint32_t> modules_loaded{0};
constexpr std::uint32_t kMaxModuleId = 0xffff;

int SendModule(wire::FrameType type, std::string_view text) {
  ThreadState& t = State();
  std::lock_guard<RawMutex> lock(t.mu);
  SendBatch(t);
  if (!Connected(t)) return 0;
  const std::uint32_t id = modules_loaded.fetch_add(1) + 1;
  if (id > kMaxModuleId) return 0;
  if (!t.client.SendModule(type, id, text)) RunEnded(t);
  return static_cast<int>(id);
}

}  // namespace

int ModuleFile(const char* path) {
  if (!path || !GetSettings().under_myriad) return 0;
  const std::string_view file(path);
  if (file.empty() || file.size() > wire::kMaxModulePath) return 0;
  return SendModule(wire::FrameType::kModule, file);
}

int ModulePtx(const char* ptx, std::size_t bytes) {
  if (!ptx || bytes == 0 || bytes > wire::kMaxFrameBytes - sizeof(std::uint32_t) ||
      !GetSettings().under_myriad)
    return 0;
  return SendModule(wire::FrameType::kModulePtx, std::string_view(ptx, bytes));
}

bool SendContents(std::uint32_t id, const void* at, std::size_t bytes) {
  ThreadState& t = State();
  std::lock_guard<RawMutex> lock(t.mu);
  SendBatch(t);
  if (!Connected(t)) return false;
  if (t.client.SendModule(wire::FrameType::kDeviceContents, id,
                          std::string_view(static_cast<const char*>(at), bytes)))
    return true;
  RunEnded(t);
  return false;
}

void OrderAfter(void* releaser, std::uint64_t ops) {
  auto& before = *static_cast<ThreadState*>(releaser);
  ThreadState& t = State();
  if (&before == &t || ops == 0) return;
  // Its ops must be on their way: sent by itself, or by this thread (FlushAll does the same).
  // A holder of its lock that does not let go at once is in a round trip, which sent them.
  while (before.sent.load() < ops) {
    if (before.mu.try_lock()) {
      SendBatch(before);
      before.mu.unlock();
      break;
    }
    ::syscall(SYS_sched_yield);  // the system call: the preload's would report waiting
  }
  std::lock_guard<RawMutex> lock(t.mu);
  std::uint64_t& promised = t.ordered_after[before.index];
  if (ops <= promised) return;
  promised = ops;
  std::uint64_t& pending = t.pending_after[before.index];
  pending = std::max(pending, ops);
}

void SleepUntil(std::int64_t deadline) {
  ThreadState& t = State();
  std::lock_guard<RawMutex> lock(t.mu);
  SendBatch(t);
  if (!Connected(t)) return;
  std::uint32_t version = 0;
  {
    std::lock_guard<RawMutex> host(t.host_mu);
    version = NextVersion(t);
  }
  Report(t, t, wire::HostState::kSleeping, deadline, version);
  std::int64_t time = 0;
  std::string fatal;
  if (t.client.ReadTimer(version, /*wait=*/true, &time, &fatal) != 1) RunEnded(t, std::move(fatal));
  RaiseClock(t, std::max(deadline, time));
}

std::uint32_t WaitUntil(std::int64_t deadline) {
  ThreadState& t = State();
  std::lock_guard<RawMutex> lock(t.mu);
  if (!process_started.load(std::memory_order_acquire)) return 0;
  SendBatch(t);  // what it enqueued before it waits is Myriad's to run meanwhile
  if (!Connected(t)) return 0;
  std::uint32_t version = 0;
  {
    std::lock_guard<RawMutex> host(t.host_mu);
    t.blocked = true;
    t.wait = wire::HostState::kWaitingUntil;
    t.deadline = deadline;
    version = NextVersion(t);
  }
  Report(t, t, wire::HostState::kWaitingUntil, deadline, version);
  return version;
}

int WaitOutcome(std::uint32_t version) {
  ThreadState& t = State();
  std::lock_guard<RawMutex> lock(t.mu);
  {
    std::lock_guard<RawMutex> host(t.host_mu);
    if (!t.blocked) {
      // A waker ended it, at its deadline at the latest (HostWake).
      const bool timed_out = t.clock_ps.load() >= t.deadline;
      t.deadline = -1;
      return timed_out ? kWaitTimedOut : kWaitWoken;
    }
  }
  std::int64_t time = 0;
  std::string fatal;
  const int answered = t.client.ReadTimer(version, /*wait=*/false, &time, &fatal);
  if (answered < 0) RunEnded(t, std::move(fatal));
  if (answered == 0) return kWaitGoesOn;
  // Myriad has it running from its deadline (the report it answered says so).
  std::lock_guard<RawMutex> host(t.host_mu);
  RaiseClock(t, std::max(time, t.deadline));
  t.blocked = false;
  t.deadline = -1;
  return kWaitTimedOut;
}

std::int64_t StartTime(int realtime) {
  return process_started.load(std::memory_order_acquire) ? start_ns[realtime != 0].load() : -1;
}

}  // namespace myriad::shim
