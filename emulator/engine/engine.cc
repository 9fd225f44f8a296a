// RunEngine: sets up ranks and communicators, runs one fiber per rank under the virtual-time
// scheduler, and drives the event loop. The loop processes the earliest event only when no
// ready rank is earlier, so a rank never observes a state its virtual time has not reached.
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <boost/fiber/all.hpp>
#include <chrono>
#include <limits>
#include <thread>
#include <tuple>

#include "engine/log.h"
#include "engine/simulation.h"

namespace myriad::emulator::engine {
namespace {

// How long the engine waits for silent processes before it wakes a sleeper that is due only
// once they move on (docs/engine.md).
constexpr std::chrono::milliseconds kSleeperPatience{10};
// The same for a timed wait, whose outcome a waker may still decide in virtual time: only the
// last resort against a thread spinning for it on the host without a system call. (A busy
// machine can leave a thread computing for seconds between two calls: teardown, say.)
constexpr std::chrono::milliseconds kTimedWaitPatience{30000};
// How long a timed wait's deadline waits for threads in outside waits when nothing else is
// going on: long enough for a request and its answer between two processes of the run (a
// TCPStore's) on a busy machine, short enough for a server thread that waits all run long.
constexpr std::chrono::milliseconds kOutsidePatience{200};
// When the processes are never silent (threads waiting under the preload report again every
// 20 ms of real time), how long the engine must not have moved before a sleep's deadline is
// reached anyway, and a timed wait's with a thread waiting outside (the latter only once no
// process of the run is busy on its CPU: a cold compile of flex attention's autotuning
// candidates takes minutes on 2 cores, and outcomes must not depend on how fast the machine
// compiles; kOutsideBusyPatience at the most).
constexpr std::chrono::milliseconds kSleeperStall{1000};
constexpr std::chrono::milliseconds kOutsideStall{2000};
constexpr std::chrono::milliseconds kOutsideBusyPatience{600'000};
// How long live processes that hold nothing get before a stall is called a deadlock.
constexpr std::chrono::milliseconds kDeadlockGrace{2000};

// Installs the scheduler on the engine thread and tells the simulation where it is.
class SchedulerHandle : public VirtualTimeScheduler {
 public:
  explicit SchedulerHandle(VirtualTimeScheduler** self) { *self = this; }
};

std::vector<int> SampleRanks(int world, int max_ranks) {
  std::vector<int> ranks;
  if (max_ranks <= 0) return ranks;
  if (world <= max_ranks) {
    for (int r = 0; r < world; ++r) ranks.push_back(r);
    return ranks;
  }
  for (int i = 0; i < max_ranks; ++i) {
    const int r = max_ranks == 1
                      ? 0
                      : static_cast<int>(static_cast<long long>(i) * (world - 1) / (max_ranks - 1));
    if (ranks.empty() || ranks.back() != r) ranks.push_back(r);
  }
  return ranks;
}

}  // namespace

Simulation::Simulation(Workload& workload, const netmodel::Cluster& cluster,
                       const EngineOptions& options, std::unique_ptr<KernelTimer> timer)
    : workload_(workload),
      names_(workload.names()),
      cluster_(cluster),
      options_(options),
      timer_(std::move(timer)),
      model_(cluster) {}

namespace {

// What a rank costs besides its fiber's stack: its state, streams and queues, about 17 KiB at
// 16,384 ranks of 1,000 ops each (280 MiB; docs/performance.md).
constexpr std::uint64_t kRankStateBytes = 16 * 1024;

// Refuses, before anything is built, a world whose ranks cannot fit in the address space this
// process may use (`ulimit -v`) or in the machine's memory: 1,048,576 ranks reserve 64 GiB of
// fiber stacks, which used to end in an out-of-memory exit halfway through.
Status CheckWorldFits(int world, std::size_t stack_bytes, const std::string& what) {
  const auto gib = [](std::uint64_t bytes) { return static_cast<double>(bytes) / (1ull << 30); };
  const std::uint64_t reserved =
      static_cast<std::uint64_t>(world) * (stack_bytes + kRankStateBytes);
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      reserved > limit.rlim_cur)
    return Status::InvalidArgument(fmt::format(
        "{}: {} ranks need about {:.1f} GiB of address space ({} KiB of fiber stack and about "
        "{} KiB of state each), more than this process may use ({:.1f} GiB, ulimit -v): fold "
        "the data-parallel replicas or use a smaller world",
        what, world, gib(reserved), stack_bytes / 1024, kRankStateBytes / 1024,
        gib(limit.rlim_cur)));
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const std::uint64_t resident = static_cast<std::uint64_t>(world) * kRankStateBytes;
  if (pages > 0 && page > 0 &&
      resident > static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page))
    return Status::InvalidArgument(fmt::format(
        "{}: {} ranks need about {:.1f} GiB of memory, more than this machine has ({:.1f} GiB): "
        "fold the data-parallel replicas or use a smaller world",
        what, world, gib(resident),
        gib(static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page))));
  return Status::Ok();
}

}  // namespace

Status Simulation::Prepare() {
  const int world = workload_.world_size();
  if (world < 1) return Status::InvalidArgument(workload_.description() + ": no ranks");
  if (world > cluster_.total_gpus())
    return Status::InvalidArgument(fmt::format("{} has {} ranks but the cluster has {} GPUs",
                                               workload_.description(), world,
                                               cluster_.total_gpus()));
  MYRIAD_RETURN_IF_ERROR(
      CheckWorldFits(world, options_.fiber_stack_bytes, workload_.description()));
  for (const CommunicatorSpec& spec : workload_.communicators()) {
    Communicator comm;
    comm.name = spec.name;
    comm.ranks = spec.ranks;
    for (size_t i = 0; i < spec.ranks.size(); ++i) {
      const int member = spec.ranks[i];
      if (member < 0 || member >= world)
        return Status::InvalidArgument(fmt::format("communicator '{}': rank {} is outside 0..{}",
                                                   names_.Name(spec.name), member, world - 1));
      if (!comm.comm_rank.emplace(member, static_cast<int>(i)).second)
        return Status::InvalidArgument(
            fmt::format("communicator '{}' lists rank {} twice", names_.Name(spec.name), member));
    }
    // Timed on the GPUs its members run on, or on the ones the workload names for it.
    std::vector<int> gpus = spec.gpus;
    if (gpus.empty())
      for (int member : comm.ranks) gpus.push_back(workload_.gpu_of(member));
    for (int gpu : gpus)
      if (gpu < 0 || gpu >= cluster_.total_gpus())
        return Status::InvalidArgument(fmt::format("communicator '{}': GPU {} is outside 0..{}",
                                                   names_.Name(spec.name), gpu,
                                                   cluster_.total_gpus() - 1));
    comm.layout = model_.LayoutOf(gpus);
    comm.gpus = std::move(gpus);
    if (!comms_.emplace(spec.name, std::move(comm)).second)
      return Status::InvalidArgument(
          fmt::format("communicator '{}' is declared twice", names_.Name(spec.name)));
  }
  if (options_.fidelity == netmodel::Fidelity::kFlow) {
    auto flow = netmodel::FlowModel::Create(cluster_, options_.flow);
    if (!flow.ok()) return flow.status();
    flow_ = std::move(flow).value();
  }
  const std::vector<int> traced = SampleRanks(world, options_.timeline_max_ranks);
  ranks_.reserve(static_cast<size_t>(world));
  for (int i = 0; i < world; ++i) {
    auto r = std::make_unique<Rank>();
    r->id = i;
    auto source = workload_.OpenRank(i);
    if (!source.ok()) return source.status();
    r->source = std::move(source).value();
    r->streams.resize(2);
    r->streams[0].id = kLegacyStream;
    r->streams[1].id = kPerThreadStream;
    r->slots[kLegacyStream] = 0;
    r->slots[kPerThreadStream] = 1;
    r->traced = std::binary_search(traced.begin(), traced.end(), i);
    ranks_.push_back(std::move(r));
  }
  return Status::Ok();
}

Status Simulation::Run() {
  // A fresh thread gets a fresh fiber scheduler, so runs never share scheduling state.
  std::thread engine_thread([this] {
    boost::fibers::use_scheduling_algorithm<SchedulerHandle>(&scheduler_);
    FiberKey& main_key = boost::this_fiber::properties<FiberKey>();
    main_key.rank = -1;
    std::vector<boost::fibers::fiber> fibers;
    fibers.reserve(ranks_.size());
    for (size_t i = 0; i < ranks_.size(); ++i)
      fibers.emplace_back(std::allocator_arg,
                          boost::fibers::fixedsize_stack(options_.fiber_stack_bytes),
                          [this, i] { RankMain(static_cast<int>(i)); });
    progress_start_ = progress_last_ = std::chrono::steady_clock::now();
    // Asked once: a synthetic workload counts its ops by generating a rank of each stage.
    progress_expected_ops_ = options_.on_progress ? workload_.expected_ops() : 0;
    std::uint64_t turns = 0;
    // What the engine last waited on, and since when (real time): see the wait below.
    using StallKey = std::tuple<SimTime, SimTime, std::uint64_t, std::uint64_t>;
    StallKey stall_key{-1, -1, 0, 0};
    auto stalled_since = std::chrono::steady_clock::now();
    auto busy_asked = stalled_since - kOutsidePatience;  // when host_busy was last asked
    bool hosts_idle = false;                             // and what it answered
    std::uint64_t rank_turns = 0;  // the ranks' turns to run, for the stall key
    for (;;) {
      if (failed_) break;
      // The clock is read every 256 turns of the loop only: a turn can take 50 ns.
      if (options_.on_progress && (++turns & 255) == 0) ReportProgress(false);
      DrainInbox();
      const SimTime next_event = events_.empty() ? kNever : events_.top().time;
      const std::pair<SimTime, int> ready = scheduler_->MinReadyRank();
      // A rank whose process is still computing holds the clock back as if it were ready, and
      // ranks go in (time, rank) order whatever order their processes' ops arrive in.
      const std::pair<SimTime, int> awaiting =
          awaiting_.empty() ? std::make_pair(kNever, std::numeric_limits<int>::max())
                            : *awaiting_.begin();
      const bool ready_first = ready.first != kNever && ready < awaiting;
      const SimTime next_rank = std::min(ready.first, awaiting.first);
      // A process's sleeping thread wakes once everything before its time is done (events at
      // that time first), before any rank goes on at it.
      const SimTime next_timer = workload_.NextTimer();
      bool timer_due = next_timer != kNever && next_timer < next_event && next_timer <= next_rank;
      // A timed wait's deadline is reached when something else takes virtual time past it, or
      // when nothing could end the wait first. A thread waiting outside Myriad's view could (a
      // reply over a socket from another process of the run, a moment away in real time):
      // such a deadline waits a little for it (kOutsidePatience).
      const bool outside_may_end_it = timer_due && next_timer < workload_.NextSleep() &&
                                      std::min(next_event, next_rank) == kNever &&
                                      workload_.AnyOutsideWait();
      if (outside_may_end_it) timer_due = false;
      if (timer_due) {
        now_ = std::max(now_, next_timer);
        SetLogTime(now_);
        workload_.FireTimers(now_);
        continue;
      }
      if (next_event != kNever && next_event <= next_rank) {
        const Event e = events_.Pop();
        Rank& r = *ranks_[static_cast<size_t>(e.rank)];
        if (e.time >= kMaxSimTime) {
          Fail(Status::InvalidArgument(ClockBoundError(r, e.slot)));
          break;
        }
        now_ = e.time;
        SetLogTime(now_);
        switch (e.type) {
          case EventType::kStart:
            r.streams[static_cast<size_t>(e.slot)].start_scheduled = false;
            Begin(e.rank, e.slot);
            break;
          case EventType::kComplete:
            // A kernel whose end moved (overlap slowdown) has a newer completion event.
            if (e.generation == 0 ||
                e.generation == r.streams[static_cast<size_t>(e.slot)].generation)
              Complete(e.rank, e.slot);
            break;
          case EventType::kWake:
            if (--r.pending_waits == 0) WakeHost(r);
            break;
          case EventType::kNetwork:
            if (e.generation == network_generation_) AdvanceNetwork();
            break;
          case EventType::kPoll:
            AnswerPoll(e.generation);
            break;
        }
        continue;
      }
      if (ready_first) {
        // Let ranks run up to the next event (which wins ties) or the awaiting rank's key.
        if (next_event <= awaiting.first) {
          main_key.time = next_event;
          main_key.rank = -1;
        } else {
          main_key.time = awaiting.first;
          main_key.rank = awaiting.second;
        }
        ++rank_turns;
        boost::this_fiber::yield();
        continue;
      }
      if (awaiting_.empty() && next_timer == kNever && !MayResume()) {
        // Nothing can move, as far as the engine knows. When a rank waits for its process
        // (the others may wait on it, in a collective or a communicator's creation), that
        // process may still be between two reports on the host (a wake-up in flight, a wait
        // Myriad does not see, start-up before its first CUDA call): give the processes a
        // moment before calling it a deadlock. The outcome of a run never depends on it.
        if (!AnyAwaitsProcess()) break;
        std::unique_lock<std::mutex> lock(inbox_mu_);
        if (!inbox_cv_.wait_for(lock, kDeadlockGrace, [this] { return !inbox_.empty(); })) break;
        continue;
      }
      // Only processes can move things on: wait for one to send ops. A timer's patience is
      // a moment of silence from the processes, as before; and, since threads waiting under
      // the preload report again every 20 ms of real time, which moves nothing, a process
      // with several of them is never silent (torchtitan's rank 0 slept for ever at its end):
      // so a timer is also reached once the engine has not moved for longer (kSleeperStall,
      // kOutsideStall: its clock, an event, a rank's turn and the earliest timer unchanged).
      const StallKey key{now_, next_timer, events_.processed(), rank_turns};
      const auto real_now = std::chrono::steady_clock::now();
      if (key != stall_key) {
        stall_key = key;
        stalled_since = real_now;
      }
      const auto stalled = real_now - stalled_since;
      std::unique_lock<std::mutex> lock(inbox_mu_);
      const auto has_news = [this] { return !inbox_.empty(); };
      // Whether the engine has not moved for `stall` while no process of the run is busy on
      // its CPU (asked every kOutsidePatience: an Inductor compile worker may yet end a wait,
      // and whether a compile ends first must not depend on how fast the machine compiles),
      // or for kOutsideBusyPatience whatever the processes do.
      const auto idle_for = [&](std::chrono::milliseconds stall) {
        if (stalled < stall) return false;
        if (stalled >= kOutsideBusyPatience) return true;
        if (real_now - busy_asked >= kOutsidePatience) {
          busy_asked = real_now;
          hosts_idle = !options_.host_busy || !options_.host_busy();
        }
        return hosts_idle;
      };
      if (next_timer == kNever) {
        inbox_cv_.wait(lock, has_news);
      } else if (outside_may_end_it) {
        const bool reached =
            !inbox_cv_.wait_for(lock, kOutsidePatience, has_news) || idle_for(kOutsideStall);
        if (reached) {
          lock.unlock();
          workload_.FireTimers(next_timer);
        }
      } else if (!inbox_cv_.wait_for(lock, kSleeperPatience, has_news) || idle_for(kSleeperStall)) {
        // A timer is due only once the threads that hold time back move on, but they may be
        // spinning on the host for it (an MPI progress loop): after a moment of silence a
        // sleep ends at its own deadline anyway. GPU work keeps its virtual-time order
        // (nothing passes the holding threads' clocks); only host-side order may follow real
        // time. A timed wait (which a waker could still end before its deadline) is given
        // much longer: its outcome is decided in virtual time unless nothing else can move.
        const SimTime next_sleep = workload_.NextSleep();
        if (next_sleep != kNever) {
          lock.unlock();
          Log().debug("a sleep ends at its deadline after {} ms of silence",
                      kSleeperPatience.count());
          workload_.FireTimers(next_sleep);
        } else if (!inbox_cv_.wait_for(lock, kTimedWaitPatience, has_news) ||
                   idle_for(kSleeperStall + kTimedWaitPatience)) {
          lock.unlock();
          Log().warn(
              "a timed wait ends at its deadline after {} ms of silence while a host thread "
              "holds virtual time back: host-side order follows real time from here",
              kTimedWaitPatience.count());
          workload_.FireTimers(next_timer);
        }
      }
    }
    if (options_.on_progress) ReportProgress(true);
    if (!failed_) {
      Log().info("all ranks done; {} events processed", events_.processed());
      for (const auto& r : ranks_) {
        if (!r->finished) {
          Fail(Status::InvalidArgumentLines(DeadlockReport()));
          break;
        }
      }
    }
    // Release every rank still waiting; each sees the failure and returns.
    for (auto& r : ranks_) {
      if (r->finished) continue;
      r->wake = true;
      r->cv.notify_one();
    }
    for (auto& f : fibers) f.join();
    // Live sources may outlive the run: stop them calling back into it.
    for (auto& r : ranks_) r->source->SetWakeup(nullptr);
  });
  engine_thread.join();
  return failed_ ? error_ : Status::Ok();
}

void Simulation::ReportProgress(bool done) {
  const auto now = std::chrono::steady_clock::now();
  if (!done && now - progress_last_ < options_.progress_interval) return;
  progress_last_ = now;
  Progress p;
  p.virtual_time = now_;
  p.expected_ops = progress_expected_ops_;
  p.ranks = static_cast<int>(ranks_.size());
  for (const auto& r : ranks_) {
    p.ops += r->ops;
    p.finished += r->finished ? 1 : 0;
  }
  p.wall_seconds = std::chrono::duration<double>(now - progress_start_).count();
  p.done = done;
  options_.on_progress(p);
}

bool Simulation::AnyAwaitsProcess() const {
  for (const auto& r : ranks_)
    if (!r->finished && r->awaiting_process) return true;
  return false;
}

bool Simulation::MayResume() {
  for (const auto& r : ranks_)
    if (!r->finished && r->awaiting_process && r->source->MayResume()) return true;
  return false;
}

void Simulation::Notify(int rank) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_.push_back(rank);
  }
  inbox_cv_.notify_one();
}

void Simulation::DrainInbox() {
  std::vector<int> ranks;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    if (inbox_.empty()) return;
    ranks.swap(inbox_);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  for (int rank : ranks) {
    Rank& r = *ranks_[static_cast<size_t>(rank)];
    if (!r.awaiting_process) continue;  // it found the ops before it had to wait
    awaiting_.erase({r.hold, r.id});
    if (r.source->Pending()) {
      // Still waiting, but how far it holds time back may have changed.
      r.hold = r.source->HoldTime(r.host);
      if (r.hold != kNever) awaiting_.emplace(r.hold, r.id);
      continue;
    }
    r.awaiting_process = false;
    if (--r.pending_waits == 0) WakeHost(r);
  }
}

RunResult Simulation::Collect() {
  RunResult result;
  size_t markers = 0;
  for (const auto& rp : ranks_) {
    Rank& r = *rp;
    if (!r.source->Used()) continue;
    ++result.world_size;
    RankResult rr;
    rr.rank = r.id;
    rr.end_time = r.host;
    rr.compute = r.compute;
    rr.exposed_comm = r.exposed_comm;
    rr.idle = std::max<SimTime>(0, r.host - r.compute - r.exposed_comm);
    rr.peak_memory = r.peak_memory;
    rr.ops = r.ops;
    rr.mirror_of = r.source->mirror_of();
    for (const auto& [comm, time] : r.exposed_by_comm)
      rr.exposed_by_comm.emplace_back(names_.Name(comm), time);
    result.total_time = std::max(result.total_time, r.host);
    result.simulated_ops += r.ops;
    markers = std::max(markers, r.iteration_markers.size());
    result.ranks.push_back(rr);
  }
  result.late_ops = late_ops_;
  result.most_late = most_late_;
  result.iteration_ends.assign(markers, 0);
  for (const auto& rp : ranks_)
    for (size_t i = 0; i < rp->iteration_markers.size(); ++i)
      result.iteration_ends[i] = std::max(result.iteration_ends[i], rp->iteration_markers[i]);
  result.kernel_timing = timer_->stats();
  result.uncovered_kernels = timer_->Uncovered(names_);
  result.guessed_kernels = timer_->Guessed(names_);
  result.assumed_kernels = timer_->Assumed(names_);
  result.kernel_families = timer_->Families();
  result.clocks = timer_->clocks();
  result.fp8_accumulation = timer_->fp8_accumulation();
  result.overlap = overlap_;
  result.overlap.model = options_.overlap;
  result.overlap.flat_slowdown =
      options_.overlap == OverlapModel::kFlat ? options_.overlap_slowdown : 0;
  // A launch longer than a step is checked against steps the program marked, not the run.
  result.implausible_kernels = timer_->Implausible(
      names_, result.iteration_ends.size() >= 2 ? result.iteration_time() : SimTime{0});
  for (const auto& [key, calls] : estimate_calls_) {
    const netmodel::CollectiveEstimate& e = estimates_.at(key);
    CollectiveStats c;
    c.comm = names_.Name(key.comm);
    c.op = static_cast<netmodel::CollectiveOp>(key.op);
    c.bytes = key.bytes;
    c.algorithm = e.algorithm;
    c.protocol = e.protocol;
    c.calls = calls;
    c.duration = FromMicros(e.time_us);
    if (auto it = flow_times_.find(key); it != flow_times_.end()) {
      c.flow_mean = it->second.first / static_cast<SimTime>(calls);
      c.flow_max = it->second.second;
    }
    result.collectives.push_back(std::move(c));
  }
  std::sort(result.collectives.begin(), result.collectives.end(),
            [](const CollectiveStats& a, const CollectiveStats& b) {
              return std::tie(a.comm, a.op, a.bytes) < std::tie(b.comm, b.op, b.bytes);
            });
  if (flow_ && result.total_time > 0) {
    const netmodel::Topology& graph = flow_->topology();
    const std::vector<double> carried = flow_->CarriedBytes(ToMicros(result.total_time));
    const double seconds = ToMicros(result.total_time) * 1e-6;
    std::vector<LinkUsage> used;
    for (int id = 0; id < graph.link_count(); ++id) {
      if (carried[static_cast<size_t>(id)] <= 0) continue;
      const netmodel::Link& link = graph.link(id);
      const double capacity = link.capacity > 0 ? link.capacity : link.nominal;
      used.push_back({link.name, carried[static_cast<size_t>(id)],
                      capacity > 0 ? carried[static_cast<size_t>(id)] / (capacity * seconds) : 0});
    }
    result.links_used = static_cast<int>(used.size());
    constexpr std::size_t kBusiest = 16;
    const auto busier = [](const LinkUsage& a, const LinkUsage& b) {
      return a.utilisation != b.utilisation ? a.utilisation > b.utilisation : a.name < b.name;
    };
    const std::size_t keep = std::min(kBusiest, used.size());
    std::partial_sort(used.begin(), used.begin() + static_cast<std::ptrdiff_t>(keep), used.end(),
                      busier);
    used.resize(keep);
    result.busiest_links = std::move(used);
  }
  result.timeline = std::move(timeline_);
  std::stable_sort(result.timeline.begin(), result.timeline.end(),
                   [](const TimelineSlice& a, const TimelineSlice& b) {
                     return std::tie(a.rank, a.track, a.start) < std::tie(b.rank, b.track, b.start);
                   });
  result.markers = std::move(markers_);
  std::stable_sort(result.markers.begin(), result.markers.end(),
                   [](const TimelineMarker& a, const TimelineMarker& b) {
                     return std::tie(a.rank, a.time) < std::tie(b.rank, b.time);
                   });
  for (const auto& r : ranks_)
    if (r->traced && r->source->Used()) result.timeline_ranks.push_back(r->id);
  return result;
}

}  // namespace myriad::emulator::engine

namespace myriad::emulator {

std::string_view ToString(OverlapModel model) {
  switch (model) {
    case OverlapModel::kShared:
      return "shared";
    case OverlapModel::kFlat:
      return "flat";
    case OverlapModel::kOff:
      return "off";
  }
  return "?";
}

SimTime RunResult::iteration_time() const {
  if (iteration_ends.size() < 2) return total_time;
  return (iteration_ends.back() - iteration_ends.front()) /
         static_cast<SimTime>(iteration_ends.size() - 1);
}

Result<RunResult> RunEngine(Workload& workload, const netmodel::Cluster& cluster,
                            const EngineOptions& options, RunResult* partial) {
  engine::Log().set_level(spdlog::level::from_str(options.log_level));
  auto timer = KernelTimer::Create(cluster, options.timing);
  if (!timer.ok()) return timer.status();
  engine::Simulation sim(workload, cluster, options, std::move(timer).value());
  if (Status st = sim.Prepare(); !st.ok()) return st;
  if (Status st = sim.Run(); !st.ok()) {
    if (partial != nullptr) *partial = sim.Collect();
    return st;
  }
  return sim.Collect();
}

}  // namespace myriad::emulator
