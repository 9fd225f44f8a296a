// Host threads under `myriad run`: the waits between a process's threads carry virtual time.
//
// Each host thread has its own virtual clock (kept by the cudart shim). Myriad's engine holds
// virtual time back for every thread that could still send work, so it must know which
// threads wait on the host for another one: those hold nothing, since whatever wakes them
// runs no earlier than its waker. These wrappers report it (common/client_api.h):
//   pthread_create   the child runs from its creator's clock (announced before it starts)
//   pthread_exit / return from the start routine   the thread has ended
//   pthread_join     waits; resumes at the later of its clock and the joined thread's end
//   pthread_barrier_wait   waits; everyone leaves at the latest arrival's clock
//   pthread_mutex_lock / unlock   a contended lock waits; a lock resumes at the latest
//                                  unlock's clock (the holder's work happened before)
//   pthread_cond_wait / timedwait / clockwait, signal / broadcast   waits; a signal wakes at
//                                  the signaller's clock
//   sleep, usleep, nanosleep, clock_nanosleep   virtual: the engine answers at the deadline
//   poll, ppoll, select, pselect, epoll_wait, epoll_pwait, accept, accept4   wait (released
//                                  by no thread Myriad sees: they resume at their own clock)
//   read, readv, recv, recvfrom, recvmsg   the same, when the descriptor has nothing to read
//                                  and blocks (a pipe, socket or terminal; files never wait)
//   sem_wait / timedwait / clockwait, sem_post   like a contended mutex: a post wakes the
//                                  waiters at the poster's clock; a wait resumes no earlier
//                                  than the latest post (CPython's locks, Event and Queue wait
//                                  so). A semaphore not made by sem_init(pshared = 0) may be
//                                  posted by another process: its waits are outside waits
//   sched_yield      a spin loop waits (for another process, say): until the thread next
//                    calls into the shims or waits on a thread
// A waker reports the threads it wakes before it goes on, so Myriad never sees a process with
// no running thread while one is about to run. A signal or unlock may wake any of several
// waiters: all are reported running, and those that did not get it wait again within
// kRecheck of real time (a timed wait that returns as a spurious wake-up, which POSIX allows).
// Before the process's first CUDA call, and without Myriad's cudart, everything passes
// straight through; so does everything the shim itself locks (its own mutexes bypass these).
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "preload/table.h"

namespace {

using myriad::preload::Next;
using myriad::preload::ThreadTable;
using Table = myriad::shim::ClientTable;

// How long a waiter that may not have been the one woken waits before it looks again.
constexpr long kRecheckNs = 20'000'000;
// How often a thread in a timed wait looks for Myriad's answer that its deadline has come.
constexpr long kTimerCheckNs = 2'000'000;
// How long a contended lock waits before it reports waiting: a holder that lets go within it
// never makes its process look idle.
constexpr long kBriefNs = 1'000'000;

// Inside a wrapper: calls it makes (the shim's, libc's) pass straight through.
thread_local int depth = 0;
struct Inside {
  Inside() { ++depth; }
  ~Inside() { --depth; }
};

// The table when this call should be tracked: under Myriad, and not from inside a wrapper.
// (Before the process's first CUDA call too: a thread that waits then must not hold time.)
const Table* Tracked() {
  if (depth > 0) return nullptr;
  Inside inside;
  return ThreadTable();
}
bool Started(const Table* t) { return t->start_time(0) >= 0; }

struct Libc {
  int (*mutex_lock)(pthread_mutex_t*) = Next<decltype(mutex_lock)>("pthread_mutex_lock");
  int (*mutex_trylock)(pthread_mutex_t*) = Next<decltype(mutex_trylock)>("pthread_mutex_trylock");
  int (*mutex_timedlock)(pthread_mutex_t*, const timespec*) =
      Next<decltype(mutex_timedlock)>("pthread_mutex_timedlock");
  int (*mutex_unlock)(pthread_mutex_t*) = Next<decltype(mutex_unlock)>("pthread_mutex_unlock");
  int (*mutex_destroy)(pthread_mutex_t*) = Next<decltype(mutex_destroy)>("pthread_mutex_destroy");
  int (*cond_wait)(pthread_cond_t*,
                   pthread_mutex_t*) = Next<decltype(cond_wait)>("pthread_cond_wait");
  int (*cond_timedwait)(pthread_cond_t*, pthread_mutex_t*,
                        const timespec*) = Next<decltype(cond_timedwait)>("pthread_cond_timedwait");
  int (*cond_clockwait)(pthread_cond_t*, pthread_mutex_t*, clockid_t,
                        const timespec*) = Next<decltype(cond_clockwait)>("pthread_cond_clockwait");
  int (*cond_signal)(pthread_cond_t*) = Next<decltype(cond_signal)>("pthread_cond_signal");
  int (*cond_broadcast)(pthread_cond_t*) = Next<decltype(cond_broadcast)>("pthread_cond_broadcast");
  int (*barrier_init)(pthread_barrier_t*, const pthread_barrierattr_t*,
                      unsigned) = Next<decltype(barrier_init)>("pthread_barrier_init");
  int (*barrier_wait)(pthread_barrier_t*) = Next<decltype(barrier_wait)>("pthread_barrier_wait");
  int (*create)(pthread_t*, const pthread_attr_t*, void* (*)(void*),
                void*) = Next<decltype(create)>("pthread_create");
  int (*join)(pthread_t, void**) = Next<decltype(join)>("pthread_join");
  void (*exit)(void*) = Next<decltype(exit)>("pthread_exit");
  int (*nanosleep)(const timespec*, timespec*) = Next<decltype(nanosleep)>("nanosleep");
  int (*clock_nanosleep)(clockid_t, int, const timespec*,
                         timespec*) = Next<decltype(clock_nanosleep)>("clock_nanosleep");
  int (*poll)(pollfd*, nfds_t, int) = Next<decltype(poll)>("poll");
  int (*ppoll)(pollfd*, nfds_t, const timespec*, const sigset_t*) = Next<decltype(ppoll)>("ppoll");
  int (*select)(int, fd_set*, fd_set*, fd_set*, timeval*) = Next<decltype(select)>("select");
  int (*pselect)(int, fd_set*, fd_set*, fd_set*, const timespec*,
                 const sigset_t*) = Next<decltype(pselect)>("pselect");
  int (*epoll_wait)(int, epoll_event*, int, int) = Next<decltype(epoll_wait)>("epoll_wait");
  int (*epoll_pwait)(int, epoll_event*, int, int,
                     const sigset_t*) = Next<decltype(epoll_pwait)>("epoll_pwait");
  int (*accept)(int, sockaddr*, socklen_t*) = Next<decltype(accept)>("accept");
  int (*yield)() = Next<decltype(yield)>("sched_yield");
  int (*accept4)(int, sockaddr*, socklen_t*, int) = Next<decltype(accept4)>("accept4");
  ssize_t (*read)(int, void*, size_t) = Next<decltype(read)>("read");
  ssize_t (*readv)(int, const iovec*, int) = Next<decltype(readv)>("readv");
  ssize_t (*recv)(int, void*, size_t, int) = Next<decltype(recv)>("recv");
  ssize_t (*recvfrom)(int, void*, size_t, int, sockaddr*,
                      socklen_t*) = Next<decltype(recvfrom)>("recvfrom");
  ssize_t (*recvmsg)(int, msghdr*, int) = Next<decltype(recvmsg)>("recvmsg");
  int (*sem_init)(sem_t*, int, unsigned) = Next<decltype(sem_init)>("sem_init");
  int (*sem_destroy)(sem_t*) = Next<decltype(sem_destroy)>("sem_destroy");
  int (*sem_post)(sem_t*) = Next<decltype(sem_post)>("sem_post");
  int (*sem_wait)(sem_t*) = Next<decltype(sem_wait)>("sem_wait");
  int (*sem_trywait)(sem_t*) = Next<decltype(sem_trywait)>("sem_trywait");
  int (*sem_timedwait)(sem_t*, const timespec*) = Next<decltype(sem_timedwait)>("sem_timedwait");
  int (*sem_clockwait)(sem_t*, clockid_t,
                       const timespec*) = Next<decltype(sem_clockwait)>("sem_clockwait");
};
const Libc& Real() {
  static const Libc libc;
  return libc;
}

// What the wrappers know about the program's synchronisation objects, under one lock (libc's
// own, so it is never tracked).
struct Barrier {
  unsigned count = 0, arrived = 0;
  std::int64_t latest = 0;
  std::vector<void*> waiting;
};
struct Objects {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  // What a mutex's (semaphore's, ended thread's) latest release left for whoever takes it:
  // the latest unlock's clock, and who let go of it last having enqueued how many ops (a
  // thread that enqueued none leaves them as they were: the work it saw let go of comes
  // first still).
  struct Release {
    std::int64_t clock = 0;
    void* by = nullptr;
    std::uint64_t ops = 0;
  };
  std::unordered_map<const void*, Release> released;
  std::unordered_map<const void*, std::vector<void*>> waiters;  // mutex or cond -> threads
  std::unordered_map<const void*, Barrier> barriers;
  std::unordered_map<pthread_t, void*> threads;  // for joins
  // Mutexes a condition wait is letting go of inside libc (where no unlock wrapper runs): a
  // thread that finds one held waits for it without reporting, since it is about to run.
  std::unordered_map<const void*, int> releasing;
  // Semaphores made by sem_init(pshared = 0): posted only by this process's threads.
  std::unordered_map<const void*, bool> private_semaphores;
};
Objects& Objs() {
  static auto* objects = new Objects();  // never destroyed: threads may outlive statics
  return *objects;
}
struct Locked {
  Locked() { Real().mutex_lock(&Objs().mu); }
  ~Locked() { Real().mutex_unlock(&Objs().mu); }
};

std::int64_t Clock(const Table* t) { return t->thread_clock(t->thread_self()); }

// The calling thread waits on `object` (objects locked): registered, then reported waiting.
void WaitOn(const Table* t, const void* object) {
  Objs().waiters[object].push_back(t->thread_self());
  t->host_block();
}
void StopWaiting(const Table* t, const void* object) {
  auto it = Objs().waiters.find(object);
  if (it == Objs().waiters.end()) return;
  auto& list = it->second;
  list.erase(std::remove(list.begin(), list.end(), t->thread_self()), list.end());
  if (list.empty()) Objs().waiters.erase(it);
}
// Every thread waiting on `object` runs again from `at` (objects locked).
void WakeAll(const Table* t, const void* object, std::int64_t at) {
  auto it = Objs().waiters.find(object);
  if (it == Objs().waiters.end()) return;
  for (void* waiter : it->second) t->host_wake(waiter, at);
  Objs().waiters.erase(it);
}
// The calling thread lets go of what `release` records (objects locked): whoever takes it
// next orders its ops after the ones this thread enqueued so far.
void RecordRelease(const Table* t, Objects::Release& release) {
  if (t->version < 6) return;
  if (const std::uint64_t ops = t->ops_enqueued(); ops > 0) {
    release.by = t->thread_self();
    release.ops = ops;
  }
}
// What the latest release of `object` left (objects locked).
Objects::Release ReleaseOf(const void* object) {
  auto it = Objs().released.find(object);
  return it == Objs().released.end() ? Objects::Release{} : it->second;
}
// The calling thread took `object`, which `release` let go of (no lock held): the work
// enqueued before that reaches Myriad's GPU queues before the caller's next ops, so a thread
// that takes a lock right after another let go of it (PyTorch's main thread after autograd's
// backward) never has its work run first.
void OrderAfter(const Table* t, const Objects::Release& release) {
  if (release.by != nullptr && t->version >= 6) t->order_after(release.by, release.ops);
}
void ForgetObject(const void* object) { Objs().released.erase(object); }
// The calling thread lets go of `object` (a mutex's unlock, a semaphore's post; objects
// locked): whoever takes it next resumes no earlier than now, and its waiters run again.
void LetGo(const Table* t, const void* object) {
  const std::int64_t now = Clock(t);
  if (Started(t)) {
    Objects::Release& release = Objs().released[object];
    release.clock = std::max(release.clock, now);
    RecordRelease(t, release);
  }
  WakeAll(t, object, now);
}

// The real time `ns` from now on CLOCK_REALTIME (the syscall: the wrapper is virtual).
timespec RealIn(long ns) {
  timespec ts{};
  ::syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
  ts.tv_nsec += ns;
  ts.tv_sec += ts.tv_nsec / 1'000'000'000;
  ts.tv_nsec %= 1'000'000'000;
  return ts;
}

// A thread the program starts, and what it runs.
struct Start {
  void* handle;
  void* (*routine)(void*);
  void* arg;
};

// The calling thread ends: whoever joins it runs again from its clock, reported before its
// own end so that Myriad never sees the process idle in between.
void Exiting(const Table* t) {
  Inside inside;
  {
    Locked lock;
    if (Started(t)) RecordRelease(t, Objs().released[t->thread_self()]);
    WakeAll(t, t->thread_self(), Clock(t));
  }
  t->thread_exited(t->thread_self());
}

void* Trampoline(void* p) {
  const Start start = *static_cast<Start*>(p);
  delete static_cast<Start*>(p);
  const Table* t = ThreadTable();
  if (t != nullptr) t->thread_adopt(start.handle);
  void* result = start.routine(start.arg);
  if (t != nullptr) Exiting(t);
  return result;
}

std::int64_t Nanos(const timespec& ts) {
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Sleeps `ns` of virtual time once the process has made its first CUDA call; false if the
// caller should sleep for real (before it, the host clock is real too).
bool VirtualSleep(std::int64_t ns) {
  const Table* t = Tracked();
  if (t == nullptr || !Started(t)) return false;
  Inside inside;
  t->sleep_until(t->thread_time() + std::max<std::int64_t>(ns, 0) * 1000);
  return true;
}

// A wait released by nothing Myriad sees (a file descriptor): the thread holds nothing while
// in it and resumes at its own clock.
// `timeout_ns` (-1: none): a wait that times out moves the thread's clock by it, so a loop
// that polls until the clock passes a time ends.
template <typename F>
auto Untracked(F wait, std::int64_t timeout_ns = -1) {
  const Table* t = Tracked();
  if (t == nullptr) return wait();
  std::int64_t from = 0;
  {
    Inside inside;
    from = Clock(t);
    t->host_wait_outside();
  }
  auto result = wait();
  Inside inside;
  const bool timed_out = result == 0 && timeout_ns > 0 && Started(t);
  t->host_resume(timed_out ? from + timeout_ns * 1000 : 0);
  return result;
}

// A read of `fd` returns at once: it does not block, or has data, end of file or an error
// waiting (poll with no timeout, the real one).
bool ReadReturnsAtOnce(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_NONBLOCK) != 0) return true;
  pollfd p{fd, POLLIN, 0};
  return Real().poll(&p, 1, 0) != 0;
}
// A read that would block waits for a writer Myriad may not see (another process, a thread
// that is itself waiting): an outside wait.
template <typename F>
ssize_t ReadWait(int fd, F read) {
  // Before the process's first CUDA call nothing is reported (a shell or a launcher that
  // never uses CUDA must not join the run by reading a pipe).
  const Table* t = Tracked();
  if (t == nullptr || !Started(t) || ReadReturnsAtOnce(fd)) return read();
  return Untracked(read);
}

// A semaphore wait, until `real_deadline` (CLOCK_REALTIME; null: none) or, for a semaphore
// of this process, until virtual time `deadline` (-1: none; see TimedWait). It waits like a
// contended mutex and resumes no earlier than the latest post; a semaphore another process
// may post is an outside wait.
int SemaphoreWait(const Table* t, sem_t* sem, const timespec* real_deadline,
                  std::int64_t deadline = -1) {
  int rc = Real().sem_trywait(sem);
  bool is_private = false;
  {
    Locked lock;
    auto it = Objs().private_semaphores.find(sem);
    is_private = it != Objs().private_semaphores.end() && it->second;
  }
  // Another process may post it: only real time can decide (the remaining virtual time).
  timespec virtual_as_real{};
  const std::int64_t virtual_deadline = deadline;
  const auto wait_in_real_time = [&] {
    virtual_as_real = RealIn(static_cast<long>(
        std::clamp<std::int64_t>((deadline - Clock(t)) / 1000, 0, 1'000'000'000'000)));
    real_deadline = &virtual_as_real;
    deadline = -1;
  };
  if (deadline >= 0 && !is_private) wait_in_real_time();
  while (rc != 0 && errno == EAGAIN) {
    std::uint32_t version = 0;
    {
      // As for a mutex: posts happen under the objects' lock, so either this takes the post
      // or the post finds this thread waiting.
      Locked lock;
      rc = Real().sem_trywait(sem);
      if (rc == 0 || errno != EAGAIN) break;
      if (is_private && deadline >= 0) {
        Objs().waiters[sem].push_back(t->thread_self());
        version = t->wait_until(deadline);
        if (version == 0) {
          StopWaiting(t, sem);
          wait_in_real_time();
        }
      } else if (is_private) {
        WaitOn(t, sem);
      } else {
        t->host_wait_outside();
      }
    }
    if (version != 0) {
      // Decided in virtual time: a post, or Myriad's answer that the deadline has come.
      int outcome = myriad::shim::kWaitGoesOn;
      do {
        const timespec check = RealIn(kTimerCheckNs);
        rc = Real().sem_timedwait(sem, &check);
        outcome = t->wait_outcome(version);
      } while (rc != 0 && outcome == myriad::shim::kWaitGoesOn);
      const int saved = errno;
      {
        Locked lock;
        StopWaiting(t, sem);
      }
      errno = saved;
      if (rc == 0) break;
      if (outcome == myriad::shim::kWaitTimedOut) {
        errno = ETIMEDOUT;
        break;
      }
      errno = EAGAIN;  // woken, but another waiter took the post: wait again
      continue;
    }
    const timespec recheck = RealIn(kRecheckNs);
    const bool last = real_deadline != nullptr && Nanos(*real_deadline) < Nanos(recheck);
    rc = Real().sem_timedwait(sem, last ? real_deadline : &recheck);
    const int saved = errno;
    {
      Locked lock;
      if (is_private) StopWaiting(t, sem);
    }
    errno = saved;
    if (rc != 0 && errno == ETIMEDOUT) {
      if (last) break;  // the caller's deadline
      errno = EAGAIN;   // not its turn yet: wait again (reported again)
    }
  }
  const int saved = errno;
  Objects::Release release;
  if (rc == 0 && is_private && Started(t)) {
    Locked lock;
    release = ReleaseOf(sem);
  }
  OrderAfter(t, release);
  std::int64_t posted = release.clock;
  // Timed out in real time: the clock moves to the deadline, as TimedWait's would.
  if (rc != 0 && saved == ETIMEDOUT && virtual_deadline >= 0 && deadline < 0)
    posted = virtual_deadline;
  t->host_resume(posted);
  errno = saved;
  return rc;
}

// Timed waits keep their real deadline (the program computed it from its clock, which is
// virtual: the remaining time is taken as real time). docs/run.md says what this means.
// Nanoseconds from the program's (virtual) `clock` now to `abstime`, at least 0.
std::int64_t VirtualLeft(clockid_t clock, const timespec* abstime) {
  timespec now{};
  ::clock_gettime(clock, &now);  // the program's (virtual) clock
  return std::max<std::int64_t>(0, Nanos(*abstime) - Nanos(now));
}

// A wait until `abstime` on the program's `clock` (a timed condition or semaphore wait).
// Once the process has started, its outcome is decided in virtual time: `virtual_wait(d)`
// waits until a waker ends it or Myriad says that virtual time has reached the deadline d
// (ClientTable::wait_until), so it ends the same way however fast the machine runs. Before
// then (or without Myriad), `real_wait(real_deadline, &timed_out)` waits the remaining time
// in real time, and a timeout moves the thread's clock to the deadline, so a "wait until the
// clock passes T" loop ends.
template <typename VirtualWait, typename RealWait>
int TimedWait(const Table* t, clockid_t clock, const timespec* abstime, VirtualWait virtual_wait,
              RealWait real_wait) {
  const std::int64_t left = VirtualLeft(clock, abstime);
  const std::int64_t from = Clock(t);
  if (Started(t) && t->version >= 5 && left > 0) return virtual_wait(from + left * 1000);
  const timespec deadline =
      RealIn(static_cast<long>(std::min<std::int64_t>(left, 1'000'000'000'000)));
  bool timed_out = false;
  const int rc = real_wait(&deadline, &timed_out);
  if (timed_out && Started(t)) {
    const int saved = errno;
    t->host_resume(from + left * 1000);
    errno = saved;
  }
  return rc;
}

std::int64_t MillisNs(int ms) { return ms < 0 ? -1 : static_cast<std::int64_t>(ms) * 1'000'000; }
std::int64_t SpecNs(const timespec* ts) { return ts == nullptr ? -1 : Nanos(*ts); }

}  // namespace

extern "C" {

#define MYRIAD_PRELOAD_EXPORT __attribute__((visibility("default")))

MYRIAD_PRELOAD_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                         void* (*routine)(void*), void* arg) {
  const Table* t = depth == 0 ? ThreadTable() : nullptr;
  if (t == nullptr) return Real().create(thread, attr, routine, arg);
  Inside inside;
  void* handle = t->thread_created();
  auto* start = new Start{handle, routine, arg};
  const int rc = Real().create(thread, attr, Trampoline, start);
  if (rc != 0) {
    delete start;
    t->thread_exited(handle);  // it never ran
    return rc;
  }
  Locked lock;
  Objs().threads[*thread] = handle;
  return 0;
}

MYRIAD_PRELOAD_EXPORT void pthread_exit(void* value) {
  if (const Table* t = depth == 0 ? ThreadTable() : nullptr) Exiting(t);
  Real().exit(value);
  __builtin_unreachable();
}

MYRIAD_PRELOAD_EXPORT int pthread_join(pthread_t thread, void** value) {
  const Table* t = Tracked();
  if (t == nullptr) return Real().join(thread, value);
  Inside inside;
  void* joined = nullptr;
  bool waits = false;
  {
    Locked lock;
    auto it = Objs().threads.find(thread);
    if (it != Objs().threads.end()) joined = it->second;
    // Waits on the thread (its end wakes it); one that has ended already does not block it.
    waits = joined != nullptr && !t->thread_ended(joined);
    if (waits) WaitOn(t, joined);
  }
  const int rc = Real().join(thread, value);
  if (waits) {
    Locked lock;
    StopWaiting(t, joined);
  }
  // The joined thread's work came first: the join ends no earlier than it did.
  Objects::Release release;
  if (rc == 0 && joined != nullptr) {
    Locked lock;
    release = ReleaseOf(joined);
  }
  OrderAfter(t, release);
  t->host_resume(rc == 0 && joined != nullptr ? t->thread_clock(joined) : 0);
  if (rc == 0) {
    Locked lock;
    Objs().threads.erase(thread);
    if (joined != nullptr) ForgetObject(joined);
  }
  return rc;
}

MYRIAD_PRELOAD_EXPORT int pthread_barrier_init(pthread_barrier_t* barrier,
                                               const pthread_barrierattr_t* attr, unsigned count) {
  const int rc = Real().barrier_init(barrier, attr, count);
  if (rc == 0) {
    Inside inside;
    Locked lock;
    Objs().barriers[barrier] = Barrier{count, 0, 0, {}};
  }
  return rc;
}

MYRIAD_PRELOAD_EXPORT int pthread_barrier_wait(pthread_barrier_t* barrier) {
  const Table* t = Tracked();
  if (t == nullptr) return Real().barrier_wait(barrier);
  Inside inside;
  {
    Locked lock;
    auto it = Objs().barriers.find(barrier);
    if (it != Objs().barriers.end() && it->second.count > 0) {
      Barrier& b = it->second;
      b.latest = std::max(b.latest, Clock(t));
      if (++b.arrived == b.count) {
        // The last to arrive releases everyone at the latest arrival's clock.
        for (void* waiter : b.waiting) t->host_wake(waiter, b.latest);
        t->host_resume(b.latest);
        b = Barrier{b.count, 0, 0, {}};
      } else {
        b.waiting.push_back(t->thread_self());
        t->host_block();
      }
    }
  }
  const int rc = Real().barrier_wait(barrier);
  t->host_resume(0);  // its waker set its clock
  return rc;
}

MYRIAD_PRELOAD_EXPORT int pthread_mutex_lock(pthread_mutex_t* mutex) {
  const Table* t = Tracked();
  if (t == nullptr) return Real().mutex_lock(mutex);
  Inside inside;
  int rc = Real().mutex_trylock(mutex);
  if (rc == EBUSY) {
    // Most holders let go at once (a condition wait releases its mutex inside libc, where no
    // wrapper sees it): a short real wait first, still counted as running.
    const timespec soon = RealIn(kBriefNs);
    rc = Real().mutex_timedlock(mutex, &soon);
    if (rc == ETIMEDOUT) rc = EBUSY;
  }
  while (rc == EBUSY) {
    // Contended: it waits on the holder, holding nothing; an unlock wakes it. A mutex that a
    // condition wait is releasing is as good as free: wait for it still counted as running.
    bool report = true;
    {
      // Under the objects' lock, where unlocks happen: either the holder has let go (the
      // trylock takes it) or its unlock will find this thread waiting and wake it.
      Locked lock;
      rc = Real().mutex_trylock(mutex);
      if (rc != EBUSY) break;
      report = Objs().releasing.count(mutex) == 0;
      if (report) WaitOn(t, mutex);
    }
    if (!report) {
      rc = Real().mutex_lock(mutex);
      break;
    }
    const timespec deadline = RealIn(kRecheckNs);
    rc = Real().mutex_timedlock(mutex, &deadline);
    {
      Locked lock;
      StopWaiting(t, mutex);
    }
    if (rc == ETIMEDOUT) rc = EBUSY;  // not its turn yet: wait again (reported again)
  }
  Objects::Release release;
  {
    Locked lock;
    Objs().releasing.erase(mutex);  // taken: whatever released it is done
    release = ReleaseOf(mutex);
  }
  if (!Started(t)) release.clock = 0;  // clocks are all real until the first CUDA call
  OrderAfter(t, release);
  t->host_resume(release.clock);
  return rc;
}

MYRIAD_PRELOAD_EXPORT int pthread_mutex_unlock(pthread_mutex_t* mutex) {
  const Table* t = Tracked();
  if (t == nullptr) return Real().mutex_unlock(mutex);
  Inside inside;
  Locked lock;
  LetGo(t, mutex);
  // Released under the objects' lock, so that a thread about to report waiting on it either
  // takes it or is woken (no wake-up lost in between).
  return Real().mutex_unlock(mutex);
}

MYRIAD_PRELOAD_EXPORT int pthread_mutex_destroy(pthread_mutex_t* mutex) {
  if (depth == 0 && ThreadTable() != nullptr) {
    Inside inside;
    Locked lock;
    ForgetObject(mutex);
    Objs().waiters.erase(mutex);
  }
  return Real().mutex_destroy(mutex);
}

// A condition wait lets its mutex go at the waiter's clock (objects locked): its waiters run
// again, and while libc releases it a thread that finds it held waits counted as running.
static void LetGoForCondWait(const Table* t, pthread_mutex_t* mutex) {
  Objects::Release& release = Objs().released[mutex];
  release.clock = std::max(release.clock, Clock(t));
  if (Started(t)) RecordRelease(t, release);
  ++Objs().releasing[mutex];
  WakeAll(t, mutex, Clock(t));
}
// The wait is over and libc has re-taken the mutex: the thread resumes no earlier than the
// latest unlock.
static void RetakeAfterCondWait(const Table* t, pthread_cond_t* cond, pthread_mutex_t* mutex) {
  Objects::Release release;
  {
    Locked lock;
    StopWaiting(t, cond);
    auto it = Objs().releasing.find(mutex);
    if (it != Objs().releasing.end() && --it->second <= 0) Objs().releasing.erase(it);
    release = ReleaseOf(mutex);
  }
  OrderAfter(t, release);
  t->host_resume(release.clock);
}

// A condition wait: the mutex is released at the waiter's clock; a signal wakes it at the
// signaller's; re-taking the mutex resumes it no earlier than the latest unlock.
static int CondWait(const Table* t, pthread_cond_t* cond, pthread_mutex_t* mutex,
                    const timespec* real_deadline) {
  {
    Locked lock;
    LetGoForCondWait(t, mutex);
    WaitOn(t, cond);
  }
  const timespec recheck = RealIn(kRecheckNs);
  const timespec* until =
      real_deadline != nullptr && Nanos(*real_deadline) < Nanos(recheck) ? real_deadline : &recheck;
  int rc = Real().cond_timedwait(cond, mutex, until);
  if (rc == ETIMEDOUT && until == &recheck) rc = 0;  // a spurious wake-up: the caller looks again
  RetakeAfterCondWait(t, cond, mutex);
  return rc;
}

MYRIAD_PRELOAD_EXPORT int pthread_cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex) {
  const Table* t = Tracked();
  if (t == nullptr) return Real().cond_wait(cond, mutex);
  Inside inside;
  return CondWait(t, cond, mutex, nullptr);
}

// A timed condition wait decided in virtual time (TimedWait): released at the waiter's clock,
// ended by a signal before `deadline` or by Myriad at it; re-taking the mutex resumes it no
// earlier than the latest unlock.
static int VirtualCondWait(const Table* t, pthread_cond_t* cond, pthread_mutex_t* mutex,
                           std::int64_t deadline) {
  std::uint32_t version = 0;
  {
    Locked lock;
    LetGoForCondWait(t, mutex);
    Objs().waiters[cond].push_back(t->thread_self());
    version = t->wait_until(deadline);
  }
  int outcome = myriad::shim::kWaitTimedOut;
  if (version != 0) {
    outcome = myriad::shim::kWaitGoesOn;
    while (outcome == myriad::shim::kWaitGoesOn) {
      const timespec check = RealIn(kTimerCheckNs);
      Real().cond_timedwait(cond, mutex, &check);
      outcome = t->wait_outcome(version);
    }
  }
  RetakeAfterCondWait(t, cond, mutex);
  return outcome == myriad::shim::kWaitTimedOut ? ETIMEDOUT : 0;
}

static int TimedCondWait(const Table* t, pthread_cond_t* cond, pthread_mutex_t* mutex,
                         clockid_t clock, const timespec* abstime) {
  return TimedWait(
      t, clock, abstime,
      [&](std::int64_t deadline) { return VirtualCondWait(t, cond, mutex, deadline); },
      [&](const timespec* deadline, bool* timed_out) {
        const int rc = CondWait(t, cond, mutex, deadline);
        *timed_out = rc == ETIMEDOUT;
        return rc;
      });
}

MYRIAD_PRELOAD_EXPORT int pthread_cond_timedwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                                                 const timespec* abstime) {
  const Table* t = Tracked();
  if (t == nullptr) return Real().cond_timedwait(cond, mutex, abstime);
  Inside inside;
  return TimedCondWait(t, cond, mutex, CLOCK_REALTIME, abstime);
}

MYRIAD_PRELOAD_EXPORT int pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                                                 clockid_t clock, const timespec* abstime) {
  const Table* t = Tracked();
  if (t == nullptr) return Real().cond_clockwait(cond, mutex, clock, abstime);
  Inside inside;
  return TimedCondWait(t, cond, mutex, clock, abstime);
}

MYRIAD_PRELOAD_EXPORT int pthread_cond_signal(pthread_cond_t* cond) {
  // Any waiter may be the one woken: all are reported running; the others wait again.
  if (const Table* t = Tracked()) {
    Inside inside;
    Locked lock;
    WakeAll(t, cond, Clock(t));
  }
  return Real().cond_signal(cond);
}

MYRIAD_PRELOAD_EXPORT int pthread_cond_broadcast(pthread_cond_t* cond) {
  if (const Table* t = Tracked()) {
    Inside inside;
    Locked lock;
    WakeAll(t, cond, Clock(t));
  }
  return Real().cond_broadcast(cond);
}

// ---- Sleeps: virtual once the process has made its first CUDA call ----
MYRIAD_PRELOAD_EXPORT int nanosleep(const timespec* request, timespec* remain) {
  if (request != nullptr && request->tv_nsec >= 0 && request->tv_nsec < 1'000'000'000 &&
      VirtualSleep(Nanos(*request))) {
    if (remain != nullptr) *remain = timespec{};
    return 0;
  }
  return Real().nanosleep(request, remain);
}

MYRIAD_PRELOAD_EXPORT int clock_nanosleep(clockid_t clock, int flags, const timespec* request,
                                          timespec* remain) {
  const Table* tracked = Tracked();
  if (request != nullptr && (clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC) &&
      tracked != nullptr && Started(tracked)) {
    std::int64_t ns = Nanos(*request);
    if (flags & TIMER_ABSTIME) {
      timespec now{};
      ::clock_gettime(clock, &now);  // virtual
      ns -= Nanos(now);
    }
    if (VirtualSleep(ns)) {
      if (remain != nullptr) *remain = timespec{};
      return 0;
    }
  }
  return Real().clock_nanosleep(clock, flags, request, remain);
}

MYRIAD_PRELOAD_EXPORT int usleep(useconds_t us) {
  if (VirtualSleep(static_cast<std::int64_t>(us) * 1000)) return 0;
  const timespec ts{static_cast<time_t>(us / 1'000'000), static_cast<long>(us % 1'000'000) * 1000};
  return Real().nanosleep(&ts, nullptr);
}

MYRIAD_PRELOAD_EXPORT unsigned sleep(unsigned seconds) {
  if (VirtualSleep(static_cast<std::int64_t>(seconds) * 1'000'000'000)) return 0;
  timespec ts{static_cast<time_t>(seconds), 0}, left{};
  if (Real().nanosleep(&ts, &left) != 0) return static_cast<unsigned>(left.tv_sec);
  return 0;
}

// ---- Waits on file descriptors ----
MYRIAD_PRELOAD_EXPORT int poll(pollfd* fds, nfds_t n, int timeout) {
  if (timeout == 0) return Real().poll(fds, n, timeout);
  return Untracked([&] { return Real().poll(fds, n, timeout); }, MillisNs(timeout));
}
MYRIAD_PRELOAD_EXPORT int ppoll(pollfd* fds, nfds_t n, const timespec* timeout,
                                const sigset_t* mask) {
  if (timeout != nullptr && Nanos(*timeout) == 0) return Real().ppoll(fds, n, timeout, mask);
  return Untracked([&] { return Real().ppoll(fds, n, timeout, mask); }, SpecNs(timeout));
}
MYRIAD_PRELOAD_EXPORT int select(int n, fd_set* r, fd_set* w, fd_set* e, timeval* timeout) {
  if (timeout != nullptr && timeout->tv_sec == 0 && timeout->tv_usec == 0)
    return Real().select(n, r, w, e, timeout);
  const std::int64_t ns =
      timeout == nullptr ? -1 : timeout->tv_sec * 1'000'000'000LL + timeout->tv_usec * 1000LL;
  return Untracked([&] { return Real().select(n, r, w, e, timeout); }, ns);
}
MYRIAD_PRELOAD_EXPORT int pselect(int n, fd_set* r, fd_set* w, fd_set* e, const timespec* timeout,
                                  const sigset_t* mask) {
  if (timeout != nullptr && Nanos(*timeout) == 0) return Real().pselect(n, r, w, e, timeout, mask);
  return Untracked([&] { return Real().pselect(n, r, w, e, timeout, mask); }, SpecNs(timeout));
}
MYRIAD_PRELOAD_EXPORT int epoll_wait(int fd, epoll_event* events, int n, int timeout) {
  if (timeout == 0) return Real().epoll_wait(fd, events, n, timeout);
  return Untracked([&] { return Real().epoll_wait(fd, events, n, timeout); }, MillisNs(timeout));
}
MYRIAD_PRELOAD_EXPORT int epoll_pwait(int fd, epoll_event* events, int n, int timeout,
                                      const sigset_t* mask) {
  if (timeout == 0) return Real().epoll_pwait(fd, events, n, timeout, mask);
  return Untracked([&] { return Real().epoll_pwait(fd, events, n, timeout, mask); },
                   MillisNs(timeout));
}
// A thread that yields is spinning for something (MPI's progress loop waits for another
// process so): it holds nothing until it next calls into the shims or waits on a thread.
MYRIAD_PRELOAD_EXPORT int sched_yield() {
  if (const Table* t = Tracked(); t != nullptr && Started(t)) {
    Inside inside;
    t->host_wait_outside();
  }
  return Real().yield();
}

MYRIAD_PRELOAD_EXPORT ssize_t read(int fd, void* buffer, size_t size) {
  return ReadWait(fd, [&] { return Real().read(fd, buffer, size); });
}
MYRIAD_PRELOAD_EXPORT ssize_t readv(int fd, const iovec* vectors, int count) {
  return ReadWait(fd, [&] { return Real().readv(fd, vectors, count); });
}
MYRIAD_PRELOAD_EXPORT ssize_t recv(int fd, void* buffer, size_t size, int flags) {
  if ((flags & MSG_DONTWAIT) != 0) return Real().recv(fd, buffer, size, flags);
  return ReadWait(fd, [&] { return Real().recv(fd, buffer, size, flags); });
}
MYRIAD_PRELOAD_EXPORT ssize_t recvfrom(int fd, void* buffer, size_t size, int flags, sockaddr* from,
                                       socklen_t* length) {
  if ((flags & MSG_DONTWAIT) != 0) return Real().recvfrom(fd, buffer, size, flags, from, length);
  return ReadWait(fd, [&] { return Real().recvfrom(fd, buffer, size, flags, from, length); });
}
MYRIAD_PRELOAD_EXPORT ssize_t recvmsg(int fd, msghdr* message, int flags) {
  if ((flags & MSG_DONTWAIT) != 0) return Real().recvmsg(fd, message, flags);
  return ReadWait(fd, [&] { return Real().recvmsg(fd, message, flags); });
}

// ---- Semaphores ----
MYRIAD_PRELOAD_EXPORT int sem_init(sem_t* sem, int pshared, unsigned value) {
  const int rc = Real().sem_init(sem, pshared, value);
  if (rc == 0 && depth == 0 && ThreadTable() != nullptr) {
    Inside inside;
    Locked lock;
    Objs().private_semaphores[sem] = pshared == 0;
    ForgetObject(sem);
  }
  return rc;
}
MYRIAD_PRELOAD_EXPORT int sem_destroy(sem_t* sem) {
  if (depth == 0 && ThreadTable() != nullptr) {
    Inside inside;
    Locked lock;
    Objs().private_semaphores.erase(sem);
    ForgetObject(sem);
    Objs().waiters.erase(sem);
  }
  return Real().sem_destroy(sem);
}
MYRIAD_PRELOAD_EXPORT int sem_post(sem_t* sem) {
  if (const Table* t = Tracked(); t != nullptr && Started(t)) {
    Inside inside;
    Locked lock;
    LetGo(t, sem);
    return Real().sem_post(sem);  // under the objects' lock, as a mutex's unlock
  }
  return Real().sem_post(sem);
}
MYRIAD_PRELOAD_EXPORT int sem_wait(sem_t* sem) {
  const Table* t = Tracked();
  if (t == nullptr || !Started(t)) return Real().sem_wait(sem);
  Inside inside;
  return SemaphoreWait(t, sem, nullptr);
}
// Timed waits, as a timed condition wait's (TimedWait).
static int TimedSemaphoreWait(const Table* t, sem_t* sem, clockid_t clock,
                              const timespec* abstime) {
  if (abstime == nullptr || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1'000'000'000) {
    errno = EINVAL;
    return -1;
  }
  return TimedWait(
      t, clock, abstime,
      [&](std::int64_t deadline) { return SemaphoreWait(t, sem, nullptr, deadline); },
      [&](const timespec* deadline, bool* timed_out) {
        const int rc = SemaphoreWait(t, sem, deadline);
        *timed_out = rc != 0 && errno == ETIMEDOUT;
        return rc;
      });
}
MYRIAD_PRELOAD_EXPORT int sem_timedwait(sem_t* sem, const timespec* abstime) {
  const Table* t = Tracked();
  if (t == nullptr || !Started(t)) return Real().sem_timedwait(sem, abstime);
  Inside inside;
  return TimedSemaphoreWait(t, sem, CLOCK_REALTIME, abstime);
}
MYRIAD_PRELOAD_EXPORT int sem_clockwait(sem_t* sem, clockid_t clock, const timespec* abstime) {
  const Table* t = Tracked();
  if (t == nullptr || !Started(t)) return Real().sem_clockwait(sem, clock, abstime);
  Inside inside;
  return TimedSemaphoreWait(t, sem, clock, abstime);
}

MYRIAD_PRELOAD_EXPORT int accept(int fd, sockaddr* addr, socklen_t* length) {
  return Untracked([&] { return Real().accept(fd, addr, length); });
}
MYRIAD_PRELOAD_EXPORT int accept4(int fd, sockaddr* addr, socklen_t* length, int flags) {
  return Untracked([&] { return Real().accept4(fd, addr, length, flags); });
}

}  // extern "C"
