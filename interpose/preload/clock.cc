// libmyriad_preload.so: the host clock of a process under `myriad run` shows virtual time.
// Preloaded beside the shims, it answers clock_gettime (which std::chrono uses) and
// gettimeofday from the calling thread's virtual clock, kept by the cudart shim: the real
// clock until the process's first CUDA call, then the real reading at that call plus the
// virtual time since. MYRIAD_HOST_CLOCK=real turns it off.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "preload/table.h"

namespace {

int RealClock(clockid_t clock, timespec* ts) {
  return static_cast<int>(::syscall(SYS_clock_gettime, clock, ts));
}

// The table, unless MYRIAD_HOST_CLOCK=real keeps the real clock.
const myriad::shim::ClientTable* Table() {
  static const bool real = [] {
    const char* mode = std::getenv("MYRIAD_HOST_CLOCK");
    return mode && std::strcmp(mode, "real") == 0;
  }();
  return real ? nullptr : myriad::preload::Table();
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

}  // namespace

extern "C" __attribute__((visibility("default"))) int clock_gettime(clockid_t clock, timespec* ts) {
  const myriad::shim::ClientTable* table = Virtualised(clock) ? Table() : nullptr;
  if (!table) return RealClock(clock, ts);
  const bool realtime = clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE;
  // Real until the process's first CUDA call, then the real reading at that call plus the
  // thread's virtual time: monotonic, and start-up loops that wait on the clock still end.
  const std::int64_t start = table->version >= 3 ? table->start_time(realtime ? 1 : 0) : 0;
  if (start < 0) return RealClock(clock, ts);
  const std::int64_t ns = start + table->thread_time() / 1000;
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
