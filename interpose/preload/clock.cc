// libmyriad_preload.so: the host clock of a process under `myriad run` shows virtual time.
// Preloaded beside the shims, it answers clock_gettime (which std::chrono uses) and
// gettimeofday from the calling thread's virtual clock, kept by the cudart shim: the real
// time at start-up plus the virtual time since. MYRIAD_HOST_CLOCK=real turns it off.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "common/client_api.h"

namespace {

using GetExportTable = cudaError_t (*)(const void**, const cudaUUID_t*);

int RealClock(clockid_t clock, timespec* ts) {
  return static_cast<int>(::syscall(SYS_clock_gettime, clock, ts));
}

// The cudart shim's table, if this process has it; looked up once.
const myriad::shim::ClientTable* Table() {
  static std::atomic<int> state{0};  // 0 unknown, 1 found, 2 absent
  static const myriad::shim::ClientTable* table = nullptr;
  const int s = state.load(std::memory_order_acquire);
  if (s == 1) return table;
  if (s == 2) return nullptr;
  const char* socket = std::getenv("MYRIAD_SOCKET");
  const char* mode = std::getenv("MYRIAD_HOST_CLOCK");
  auto get = reinterpret_cast<GetExportTable>(::dlsym(RTLD_DEFAULT, "cudaGetExportTable"));
  const void* t = nullptr;
  if (socket && *socket && !(mode && std::strcmp(mode, "real") == 0) && get &&
      get(&t, &myriad::shim::kClientTableId) == cudaSuccess) {
    table = static_cast<const myriad::shim::ClientTable*>(t);
    state.store(1, std::memory_order_release);
    return table;
  }
  state.store(2, std::memory_order_release);
  return nullptr;
}

bool Virtualised(clockid_t clock) {
  switch (clock) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_MONOTONIC_COARSE:
    case CLOCK_BOOTTIME:
      return true;
    default:
      return false;  // CPU-time clocks stay real
  }
}

// Virtual time starts at the real reading of each clock family when first asked.
std::int64_t Base(bool realtime) {
  static std::atomic<std::int64_t> bases[2] = {-1, -1};
  std::int64_t b = bases[realtime].load();
  if (b >= 0) return b;
  timespec ts{};
  RealClock(realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC, &ts);
  const std::int64_t now = static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  std::int64_t expected = -1;
  bases[realtime].compare_exchange_strong(expected, now);
  return bases[realtime].load();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int clock_gettime(clockid_t clock, timespec* ts) {
  const myriad::shim::ClientTable* table = Virtualised(clock) ? Table() : nullptr;
  if (!table) return RealClock(clock, ts);
  const bool realtime = clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE;
  const std::int64_t ns = Base(realtime) + table->thread_time() / 1000;
  ts->tv_sec = static_cast<time_t>(ns / 1000000000);
  ts->tv_nsec = static_cast<long>(ns % 1000000000);
  return 0;
}

extern "C" __attribute__((visibility("default"))) int gettimeofday(timeval* tv, void* tz) {
  (void)tz;  // obsolete; glibc ignores it too
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = static_cast<suseconds_t>(ts.tv_nsec / 1000);
  return 0;
}
