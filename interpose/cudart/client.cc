#include "cudart/client.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

struct ThreadState {
  wire::Client client;
  bool connected = false;
  bool broken = false;
  std::uint32_t index = 0;
  int device = 0;
  std::int64_t clock_ps = 0;
  std::unordered_map<std::string, std::uint32_t> names;
  std::vector<std::pair<std::uint32_t, std::string>> new_names;
  std::vector<wire::WireOp> batch;
  int batch_device = -1;
  std::mutex mu;  // the exit-time flush may run on another thread
};

std::atomic<std::uint32_t> next_thread{0};
// The latest virtual time any thread of this process has been told: where new threads start.
std::atomic<std::int64_t> process_time{0};

std::mutex registry_mu;
std::vector<ThreadState*>& Registry() {
  static auto* threads = new std::vector<ThreadState*>();  // lives until the process ends
  return *threads;
}

bool SendBatch(ThreadState& t) {
  if (!t.connected) {
    const Settings& s = GetSettings();
    if (t.broken || !s.under_myriad || !t.client.Connect(s.socket) ||
        !t.client.SendHello(s.process, s.devices)) {
      if (!t.broken)
        std::fprintf(stderr, "myriad: cannot reach myriad at '%s': %s\n", s.socket.c_str(),
                     std::strerror(errno));
      t.broken = true;
      return false;
    }
    t.connected = true;
  }
  if (!t.new_names.empty()) {
    if (!t.client.SendNames(t.new_names)) return false;
    t.new_names.clear();
  }
  if (t.batch.empty()) return true;
  const bool ok = t.client.SendOps(t.batch_device, t.batch.data(),
                                   static_cast<std::uint32_t>(t.batch.size()), t.index, t.clock_ps);
  t.batch.clear();
  return ok;
}

void FlushAll() {
  std::lock_guard<std::mutex> lock(registry_mu);
  for (ThreadState* t : Registry()) {
    std::lock_guard<std::mutex> thread_lock(t->mu);
    SendBatch(*t);
  }
}

ThreadState& State() {
  thread_local ThreadState* state = [] {
    auto* t = new ThreadState();  // kept for the exit-time flush; a thread's state is small
    t->index = next_thread.fetch_add(1);
    t->clock_ps = process_time.load();
    std::lock_guard<std::mutex> lock(registry_mu);
    if (Registry().empty()) std::atexit(FlushAll);
    Registry().push_back(t);
    return t;
  }();
  return *state;
}

int SubmitLocked(ThreadState& t, const wire::WireOp& op, int device) {
  if (t.batch_device != device && !t.batch.empty() && !SendBatch(t)) return cudaErrorUnknown;
  t.batch_device = device;
  t.clock_ps += GetSettings().api_cost_ps;
  t.batch.push_back(op);
  if (t.batch.size() >= kMaxBatch && !SendBatch(t)) return cudaErrorUnknown;
  return cudaSuccess;
}

}  // namespace

const Settings& GetSettings() {
  static const Settings settings = [] {
    Settings s;
    const char* socket = std::getenv("MYRIAD_SOCKET");
    s.under_myriad = socket && *socket;
    if (s.under_myriad) s.socket = socket;
    s.process = static_cast<int>(EnvU64("MYRIAD_PROCESS", 0));
    s.devices = std::max(1, static_cast<int>(EnvU64("MYRIAD_DEVICES", 1)));
    s.api_cost_ps = static_cast<std::int64_t>(EnvU64("MYRIAD_API_COST_PS", 0));
    const char* clock = std::getenv("MYRIAD_HOST_CLOCK");
    s.virtual_clock = !(clock && std::strcmp(clock, "real") == 0);
    if (const char* name = std::getenv("MYRIAD_GPU_NAME")) s.gpu_name = name;
    s.gpu_memory = EnvU64("MYRIAD_GPU_MEMORY", s.gpu_memory);
    s.gpu_sms = static_cast<int>(EnvU64("MYRIAD_GPU_SMS", static_cast<std::uint64_t>(s.gpu_sms)));
    s.gpu_major = static_cast<int>(EnvU64("MYRIAD_GPU_MAJOR", 9));
    s.gpu_minor = static_cast<int>(EnvU64("MYRIAD_GPU_MINOR", 0));
    return s;
  }();
  return settings;
}

int CurrentDevice() { return State().device; }
void SetCurrentDevice(int device) { State().device = device; }

int Submit(const wire::WireOp& op, int device) {
  ThreadState& t = State();
  std::lock_guard<std::mutex> lock(t.mu);
  return SubmitLocked(t, op, device < 0 ? t.device : device);
}

int Call(const wire::WireOp& op, int device, wire::Reply* reply) {
  ThreadState& t = State();
  std::lock_guard<std::mutex> lock(t.mu);
  wire::WireOp waiting = op;
  waiting.flags = static_cast<std::uint8_t>(waiting.flags | wire::kWantsReply);
  if (SubmitLocked(t, waiting, device < 0 ? t.device : device) != cudaSuccess || !SendBatch(t))
    return cudaErrorUnknown;
  wire::Reply r;
  std::string fatal;
  if (!t.client.ReadReply(r, &fatal)) {
    // Myriad stopped the run (or died): nothing this process does can be timed any more.
    std::fprintf(stderr, "myriad: the run ended%s%s\n", fatal.empty() ? "" : ": ", fatal.c_str());
    std::_Exit(1);
  }
  t.clock_ps = std::max(t.clock_ps, r.host_time_ps);
  std::int64_t seen = process_time.load();
  while (seen < t.clock_ps && !process_time.compare_exchange_weak(seen, t.clock_ps)) {
  }
  if (reply) *reply = r;
  return r.status;
}

void Flush() {
  ThreadState& t = State();
  std::lock_guard<std::mutex> lock(t.mu);
  SendBatch(t);
}

std::uint32_t Intern(const std::string& name) {
  ThreadState& t = State();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.names.find(name);
  if (it != t.names.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(t.names.size() + 1);  // 0 means "no name"
  t.names.emplace(name, id);
  t.new_names.emplace_back(id, name);
  return id;
}

std::int64_t ThreadTime() { return State().clock_ps; }

}  // namespace myriad::shim
