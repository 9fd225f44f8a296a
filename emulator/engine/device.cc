// The device side of a logical rank: per-stream FIFO execution in virtual time. An op starts
// at the latest of its stream's previous op, its host enqueue time plus launch latency, and
// the ops it depends on (event waits, legacy default stream ordering).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/simulation.h"
#include "myriad/netmodel/overlap.h"

namespace myriad::emulator::engine {
namespace {

bool IsCompute(OpKind kind) {
  return kind == OpKind::kKernel || kind == OpKind::kMemcpy || kind == OpKind::kMemset;
}
bool IsComm(OpKind kind) {
  return kind == OpKind::kCollective || kind == OpKind::kSend || kind == OpKind::kRecv ||
         kind == OpKind::kGroupEnd;
}

// A lone send or receive (a group, which may hold collectives, counts as a collective).
bool IsPointToPoint(OpKind kind) { return kind == OpKind::kSend || kind == OpKind::kRecv; }

}  // namespace

void Simulation::Fail(Status status) {
  if (failed_) return;
  failed_ = true;
  error_ = std::move(status);
}

void Simulation::Account(Rank& r) {
  const SimTime dt = now_ - r.accounted_until;
  if (r.active_compute > 0) {
    r.compute += dt;
  } else if (r.active_comm > 0) {
    r.exposed_comm += dt;
    // Each communicator in flight was exposed for the whole interval (they may overlap).
    for (const auto& [comm, ops] : r.comms_in_flight) {
      if (ops == 0 || dt == 0) continue;
      auto it = std::find_if(r.exposed_by_comm.begin(), r.exposed_by_comm.end(),
                             [comm = comm](const auto& e) { return e.first == comm; });
      if (it == r.exposed_by_comm.end())
        r.exposed_by_comm.emplace_back(comm, dt);
      else
        it->second += dt;
    }
  }
  r.accounted_until = now_;
}

namespace {
// The communicator a communication op runs on (a group's first member's).
NameId CommOf(const DeviceOp& d) { return d.group.empty() ? d.op.comm : d.group.front().comm; }
}  // namespace

void Simulation::TrackCommInFlight(Rank& r, const DeviceOp& d, int delta) {
  const NameId comm = CommOf(d);
  for (auto& [name, ops] : r.comms_in_flight)
    if (name == comm) {
      ops += delta;
      return;
    }
  r.comms_in_flight.emplace_back(comm, delta);
}

void Simulation::AddSlice(const Rank& r, std::int32_t track, std::string name, std::string category,
                          SimTime start, SimTime end, std::string detail) {
  timeline_.push_back(
      {r.id, track, std::move(name), std::move(category), start, end - start, std::move(detail)});
}

void Simulation::TryStart(int rank, int slot) {
  Rank& r = *ranks_[static_cast<size_t>(rank)];
  Stream& s = r.streams[static_cast<size_t>(slot)];
  if (s.queue.empty() || s.head_started || s.start_scheduled) return;
  DeviceOp& d = s.queue.front();
  for (const Dep& dep : d.deps) {
    Stream& other = r.streams[static_cast<size_t>(dep.slot)];
    if (other.completed < dep.index) {
      other.waiters.push_back({dep.index, slot});
      return;
    }
  }
  const SimTime start = std::max(now_, d.ready_floor);
  if (start > now_) {
    s.start_scheduled = true;
    events_.Push(start, EventType::kStart, rank, slot);
    return;
  }
  Begin(rank, slot);
}

void Simulation::Begin(int rank, int slot) {
  Rank& r = *ranks_[static_cast<size_t>(rank)];
  Stream& s = r.streams[static_cast<size_t>(slot)];
  DeviceOp& d = s.queue.front();
  s.head_started = true;
  d.start = now_;
  switch (d.op.kind) {
    case OpKind::kKernel:
    case OpKind::kMemcpy:
    case OpKind::kMemset: {
      d.remaining = timer_->Time(d.op, names_);
      d.undisturbed = d.remaining;
      d.progress_at = now_;
      d.tensor_bound = d.op.gemm.m > 0 || d.op.attention.batch > 0 || d.op.counts.tensor_flops > 0;
      d.stretch = d.op.kind == OpKind::kKernel ? CommStretch(r, d) : 1.0;
      Account(r);
      ++r.active_compute;
      ScheduleKernelEnd(rank, slot);
      return;
    }
    case OpKind::kCollective:
    case OpKind::kSend:
    case OpKind::kRecv: {
      const Op call = d.op;
      if (Status st = Arrive(rank, slot, call); !st.ok()) Fail(st);
      return;
    }
    case OpKind::kGroupEnd: {
      const std::vector<Op> members = d.group;
      for (const Op& call : members) {
        if (Status st = Arrive(rank, slot, call); !st.ok()) {
          Fail(st);
          return;
        }
      }
      return;
    }
    default:  // event record, stream wait event: markers in the stream, no duration
      events_.Push(now_, EventType::kComplete, rank, slot);
      return;
  }
}

// A kernel's end under the current slowdown: work left x its stretch.
void Simulation::ScheduleKernelEnd(int rank, int slot) {
  Stream& s = ranks_[static_cast<size_t>(rank)]->streams[static_cast<size_t>(slot)];
  const DeviceOp& d = s.queue.front();
  const SimTime left = ClampedPicos(static_cast<double>(d.remaining) * d.stretch);
  events_.Push(now_ + left, EventType::kComplete, rank, slot, ++s.generation);
}

// Flat model: a send/recv to one peer runs on 2 channels (NCCL_NCHANNELS_PER_NET_PEER) of a
// collective's up to 32 (MAXCHANNELS), and takes that share of the slowdown a collective causes.
constexpr double kPointToPointSmShare = 2.0 / 32.0;

double Simulation::CommStretch(const Rank& r, const DeviceOp& d) const {
  switch (options_.overlap) {
    case OverlapModel::kOff:
      return 1.0;
    case OverlapModel::kFlat:
      if (r.active_collectives > 0) return 1.0 + options_.overlap_slowdown;
      if (r.active_comm > 0) return 1.0 + options_.overlap_slowdown * kPointToPointSmShare;
      return 1.0;
    case OverlapModel::kShared:
      break;
  }
  if (r.active_comm == 0) return 1.0;
  return d.tensor_bound ? netmodel::TensorKernelStretch(cluster_.gpu, r.comm_load.sms)
                        : netmodel::MemoryKernelStretch(cluster_, r.comm_load.hbm_rate);
}

// NCCL's channels share SMs and HBM with compute: when a rank's communication starts or stops,
// its running kernels change speed and their ends move (Restretch, once the counters and the
// load are both updated).
void Simulation::SetCommActive(Rank& r, int delta, bool collective) {
  r.active_comm += delta;
  if (collective) r.active_collectives += delta;
  if (r.active_comm == 0) r.comm_load = {};  // no rounding left behind
}

void Simulation::ChangeCommLoad(Rank& r, const CommLoad& load, int sign) {
  r.comm_load.sms += sign * load.sms;
  r.comm_load.hbm_rate = std::max(0.0, r.comm_load.hbm_rate + sign * load.hbm_rate);
}

void Simulation::Restretch(Rank& r) {
  if (options_.overlap == OverlapModel::kOff) return;
  for (size_t slot = 0; slot < r.streams.size(); ++slot) {
    Stream& s = r.streams[slot];
    if (s.queue.empty() || !s.head_started) continue;
    DeviceOp& d = s.queue.front();
    if (d.op.kind != OpKind::kKernel) continue;
    const double is = CommStretch(r, d);
    if (is == d.stretch) continue;
    const SimTime done =
        static_cast<SimTime>(std::llround(static_cast<double>(now_ - d.progress_at) / d.stretch));
    d.remaining = std::max<SimTime>(0, d.remaining - done);
    d.progress_at = now_;
    d.stretch = is;
    ScheduleKernelEnd(r.id, static_cast<int>(slot));
  }
}

void Simulation::BeginComm(int rank, int slot, const CommLoad& load) {
  Rank& r = *ranks_[static_cast<size_t>(rank)];
  DeviceOp& d = r.streams[static_cast<size_t>(slot)].queue.front();
  const bool starts = d.comm_start < 0;
  if (starts) {
    Account(r);
    SetCommActive(r, +1, !IsPointToPoint(d.op.kind));
    TrackCommInFlight(r, d, +1);
    d.comm_start = now_;
  }
  // A group's members each add theirs as they are matched.
  d.load.sms += load.sms;
  d.load.hbm_rate += load.hbm_rate;
  const bool loads =
      options_.overlap == OverlapModel::kShared && (load.sms != 0 || load.hbm_rate != 0);
  if (loads) ChangeCommLoad(r, load, +1);
  if (starts || loads) Restretch(r);
}

void Simulation::Resolve(int rank, int slot, SimTime end, std::string detail,
                         const CommLoad& load) {
  BeginComm(rank, slot, load);
  Rank& r = *ranks_[static_cast<size_t>(rank)];
  DeviceOp& d = r.streams[static_cast<size_t>(slot)].queue.front();
  d.comm_end = std::max(d.comm_end, end);
  if (r.traced && !detail.empty()) {
    if (!d.detail.empty()) d.detail += ", ";
    d.detail += detail;
  }
  if (--d.unresolved == 0) events_.Push(d.comm_end, EventType::kComplete, rank, slot);
}

void Simulation::Complete(int rank, int slot) {
  Rank& r = *ranks_[static_cast<size_t>(rank)];
  Stream& s = r.streams[static_cast<size_t>(slot)];
  DeviceOp& d = s.queue.front();
  Account(r);
  if (IsCompute(d.op.kind)) --r.active_compute;
  if (d.op.kind == OpKind::kKernel && now_ - d.start > d.undisturbed) {
    overlap_.added += now_ - d.start - d.undisturbed;
    ++overlap_.slowed_kernels;
  }
  if (IsComm(d.op.kind)) {
    if (options_.overlap == OverlapModel::kShared) ChangeCommLoad(r, d.load, -1);
    SetCommActive(r, -1, !IsPointToPoint(d.op.kind));
    Restretch(r);
    TrackCommInFlight(r, d, -1);
  }
  if (r.traced) {
    const OpKind kind = d.op.kind;
    if (IsCompute(kind)) {
      std::string name = kind == OpKind::kKernel
                             ? names_.Name(d.op.name)
                             : fmt::format("{} {}", ToString(kind),
                                           kind == OpKind::kMemcpy ? ToString(d.op.copy_kind)
                                                                   : std::string_view(""));
      AddSlice(r, s.id, std::move(name), std::string(ToString(kind)), d.start, now_,
               kind == OpKind::kKernel ? std::string() : fmt::format("{} B", d.op.bytes));
    } else if (IsComm(kind)) {
      // The wait for peers and the transfer itself are separate, nested under the call.
      std::string name = kind == OpKind::kGroupEnd ? "nccl group" : Describe(d.op);
      AddSlice(r, s.id, name, "communication", d.start, now_, d.detail);
      if (d.comm_start > d.start)
        AddSlice(r, s.id, "wait for peers", "wait", d.start, d.comm_start);
    }
  }
  if (d.op.kind == OpKind::kEventRecord) {
    // Remember when the event's latest record completed (cudaEventElapsedTime).
    auto it = r.events.find(d.op.event);
    if (it != r.events.end() && it->second.slot == slot && it->second.index == d.index)
      r.record_times[d.op.event] = now_;
  }
  s.queue.pop_front();
  ++s.completed;
  s.last_completion = now_;
  s.head_started = false;
  Satisfy(rank, slot);
  TryStart(rank, slot);
}

void Simulation::Satisfy(int rank, int slot) {
  Rank& r = *ranks_[static_cast<size_t>(rank)];
  Stream& s = r.streams[static_cast<size_t>(slot)];
  if (s.waiters.empty()) return;
  // Take the satisfied waiters out first: waking them may add waiters to this stream.
  std::vector<Waiter> ready;
  auto keep = std::stable_partition(s.waiters.begin(), s.waiters.end(),
                                    [&s](const Waiter& w) { return w.index > s.completed; });
  ready.assign(keep, s.waiters.end());
  s.waiters.erase(keep, s.waiters.end());
  for (const Waiter& w : ready) {
    if (w.target_slot == kPollWaiter) {
      AnswerPoll(w.poll);
    } else if (w.target_slot >= 0) {
      TryStart(rank, w.target_slot);
    } else if (--r.pending_waits == 0) {
      WakeHost(r);
    }
  }
}

void Simulation::WakeHost(Rank& r) {
  r.host = std::max(r.host, now_);
  r.key->time = r.host;
  r.wake = true;
  r.cv.notify_one();
}

std::string Simulation::ClockBoundError(const Rank& r, int slot, const Op* host_op) const {
  std::string where;
  const Op* op = host_op;
  if (op == nullptr && slot >= 0 && static_cast<size_t>(slot) < r.streams.size() &&
      !r.streams[static_cast<size_t>(slot)].queue.empty())
    op = &r.streams[static_cast<size_t>(slot)].queue.front().op;
  if (op == nullptr)
    where = "its host";
  else if (op->kind == OpKind::kKernel)
    where = fmt::format("kernel '{}'", names_.Name(op->name));
  else if (IsComm(op->kind) && op->kind != OpKind::kGroupEnd)
    where = Describe(*op);
  else
    where = fmt::format("a {} of {} bytes", ToString(op->kind), op->bytes);
  return fmt::format(
      "rank {}: virtual time passes Myriad's bound of 2^62 ps (about 53 days) at {}: a "
      "duration, size or rate in the input is out of range",
      r.id, where);
}

}  // namespace myriad::emulator::engine
