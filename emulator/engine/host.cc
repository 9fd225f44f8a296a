// The host side of a logical rank: its fiber reads ops from the op source and plays them as
// the CUDA runtime and NCCL would: asynchronous calls enqueue device work, synchronising
// calls block the rank's host clock until the device catches up.
#include <fmt/format.h>

#include <boost/fiber/operations.hpp>
#include <mutex>

#include "engine/simulation.h"

namespace myriad::emulator::engine {
namespace {

constexpr int kLegacySlot = 0;
constexpr std::string_view kIterationLabel = "iteration";

}  // namespace

Status Simulation::SlotOf(Rank& r, std::int32_t stream, int* slot) {
  auto it = r.slots.find(stream);
  if (it == r.slots.end())
    return Status::InvalidArgument(
        fmt::format("rank {}: stream {} is used before a stream_create", r.id, stream));
  *slot = it->second;
  return Status::Ok();
}

void Simulation::Block(Rank& r, std::string what) {
  // Called with pending_waits > 0; the event loop wakes us when they are all satisfied.
  const SimTime blocked_at = r.host;
  r.waiting_for = std::move(what);
  {
    std::unique_lock<boost::fibers::mutex> lock(r.mu);
    r.cv.wait(lock, [&r] { return r.wake; });
    r.wake = false;
  }
  if (r.traced && r.host > blocked_at)
    AddSlice(r, kHostTrack, r.waiting_for, "wait", blocked_at, r.host);
  r.waiting_for.clear();
}

void Simulation::WaitStream(Rank& r, int slot, std::uint64_t index, const std::string& what) {
  Stream& s = r.streams[static_cast<size_t>(slot)];
  if (s.completed >= index) return;
  ++r.pending_waits;
  s.waiters.push_back({index, -1});
  Block(r, what);
}

Status Simulation::Enqueue(Rank& r, const Op& op, std::vector<Op> group) {
  int slot = 0;
  if (Status st = SlotOf(r, op.stream, &slot); !st.ok()) return st;
  Stream& s = r.streams[static_cast<size_t>(slot)];
  r.host += options_.api_call_cost;
  DeviceOp d;
  d.op = op;
  d.enqueued = r.host;
  d.ready_floor = r.host + options_.launch_latency;
  d.index = ++s.enqueued;
  // Legacy default stream semantics: it waits for all blocking streams, and they wait for it.
  if (slot == kLegacySlot) {
    for (size_t i = 1; i < r.streams.size(); ++i) {
      const Stream& other = r.streams[i];
      if (other.blocking && other.enqueued > other.completed)
        d.deps.push_back({static_cast<int>(i), other.enqueued});
    }
  } else if (s.blocking) {
    const Stream& legacy = r.streams[kLegacySlot];
    if (legacy.enqueued > legacy.completed) d.deps.push_back({kLegacySlot, legacy.enqueued});
  }
  if (op.kind == OpKind::kStreamWaitEvent) {
    // Waits for the event's most recent record; an event never recorded is complete.
    auto it = r.events.find(op.event);
    if (it != r.events.end()) d.deps.push_back(it->second);
  }
  if (op.kind == OpKind::kEventRecord) r.events[op.event] = {slot, d.index};
  d.unresolved = group.empty() ? 1 : static_cast<int>(group.size());
  d.group = std::move(group);
  s.queue.push_back(std::move(d));
  if (s.queue.size() == 1) TryStart(r.id, slot);
  return Status::Ok();
}

void Simulation::SyncDevice(Rank& r) {
  for (Stream& s : r.streams) {
    if (s.completed < s.enqueued) {
      ++r.pending_waits;
      s.waiters.push_back({s.enqueued, -1});
    }
  }
  if (r.pending_waits > 0) Block(r, "device_sync");
}

Status Simulation::Execute(Rank& r, const Op& op) {
  switch (op.kind) {
    case OpKind::kHost: {
      const SimTime start = r.host;
      r.host += std::max<SimTime>(op.duration, 0);
      if (r.traced && r.host > start)
        AddSlice(r, kHostTrack,
                 std::string(names_.Name(op.name).empty() ? "host" : names_.Name(op.name)), "host",
                 start, r.host);
      return Status::Ok();
    }
    case OpKind::kMarker: {
      const std::string& label = names_.Name(op.label);
      if (label.empty() || label == kIterationLabel) r.iteration_markers.push_back(r.host);
      if (r.traced) markers_.push_back({r.id, label.empty() ? "iteration" : label, r.host});
      return Status::Ok();
    }
    case OpKind::kMalloc: {
      r.host += options_.api_call_cost;
      r.memory += op.bytes;
      r.peak_memory = std::max(r.peak_memory, r.memory);
      if (static_cast<double>(r.memory) > cluster_.gpu.hbm_bytes)
        return Status::InvalidArgument(fmt::format(
            "predicted out of memory on rank {} at {:.3f} us: malloc of {} bytes brings it to "
            "{} bytes, over the {:.0f} bytes of HBM of {} (peak {} bytes)",
            r.id, ToMicros(r.host), op.bytes, r.memory, cluster_.gpu.hbm_bytes, cluster_.gpu.key,
            r.peak_memory));
      return Status::Ok();
    }
    case OpKind::kFree: {
      r.host += options_.api_call_cost;
      if (op.bytes > r.memory)
        return Status::InvalidArgument(
            fmt::format("rank {}: free of {} bytes, but only {} bytes are allocated", r.id,
                        op.bytes, r.memory));
      r.memory -= op.bytes;
      return Status::Ok();
    }
    case OpKind::kStreamCreate: {
      r.host += options_.api_call_cost;
      if (r.slots.count(op.stream))
        return Status::InvalidArgument(
            fmt::format("rank {}: stream_create of stream {}, which exists", r.id, op.stream));
      r.slots[op.stream] = static_cast<int>(r.streams.size());
      r.streams.emplace_back();
      r.streams.back().id = op.stream;
      r.streams.back().blocking = !op.non_blocking;
      return Status::Ok();
    }
    case OpKind::kGroupStart:
      if (r.group_depth++ == 0) r.group_ops.clear();
      return Status::Ok();
    case OpKind::kGroupEnd: {
      if (r.group_depth == 0)
        return Status::InvalidArgument(fmt::format("rank {}: group_end without group_start", r.id));
      if (--r.group_depth > 0 || r.group_ops.empty()) return Status::Ok();
      // The whole group is one launch on the stream of its first operation.
      std::vector<Op> members = std::move(r.group_ops);
      r.group_ops.clear();
      Op group;
      group.kind = OpKind::kGroupEnd;
      group.stream = members.front().stream;
      for (const Op& m : members)
        if (m.stream != group.stream)
          return Status::Unsupported(fmt::format(
              "rank {}: an NCCL group with operations on streams {} and {} (Myriad runs a "
              "group on one stream)",
              r.id, group.stream, m.stream));
      return Enqueue(r, group, std::move(members));
    }
    case OpKind::kCollective:
    case OpKind::kSend:
    case OpKind::kRecv:
      if (r.group_depth > 0) {
        r.host += options_.api_call_cost;
        r.group_ops.push_back(op);
        return Status::Ok();
      }
      return Enqueue(r, op);
    case OpKind::kKernel:
    case OpKind::kEventRecord:
    case OpKind::kStreamWaitEvent:
      return Enqueue(r, op);
    case OpKind::kMemcpy:
    case OpKind::kMemset: {
      if (Status st = Enqueue(r, op); !st.ok()) return st;
      if (op.async) return Status::Ok();
      int slot = 0;
      (void)SlotOf(r, op.stream, &slot);
      WaitStream(r, slot, r.streams[static_cast<size_t>(slot)].enqueued,
                 fmt::format("blocking {} on stream {}", ToString(op.kind), op.stream));
      return Status::Ok();
    }
    case OpKind::kStreamSync: {
      r.host += options_.api_call_cost;
      int slot = 0;
      if (Status st = SlotOf(r, op.stream, &slot); !st.ok()) return st;
      WaitStream(r, slot, r.streams[static_cast<size_t>(slot)].enqueued,
                 fmt::format("stream_sync on stream {}", op.stream));
      return Status::Ok();
    }
    case OpKind::kDeviceSync:
      r.host += options_.api_call_cost;
      SyncDevice(r);
      return Status::Ok();
    case OpKind::kEventSync: {
      r.host += options_.api_call_cost;
      auto it = r.events.find(op.event);
      if (it == r.events.end()) return Status::Ok();  // never recorded: complete
      WaitStream(r, it->second.slot, it->second.index,
                 fmt::format("event_sync on event {}", op.event));
      return Status::Ok();
    }
    case OpKind::kEventQuery: {
      // The answer at this host time needs every event up to it: let the loop catch up.
      r.host += options_.api_call_cost;
      ++r.pending_waits;
      events_.Push(r.host, EventType::kWake, r.id, 0);
      Block(r, fmt::format("event_query on event {}", op.event));
      return Status::Ok();
    }
  }
  return Status::Ok();
}

void Simulation::RankMain(int rank) {
  Rank& r = *ranks_[static_cast<size_t>(rank)];
  r.key = &boost::this_fiber::properties<FiberKey>();
  r.key->rank = rank;
  r.key->time = r.host;
  Op op;
  while (!failed_) {
    Result<bool> next = r.source->Next(op);
    if (!next.ok()) {
      Fail(next.status());
      break;
    }
    if (!*next) break;
    ++r.ops;
    if (Status st = Execute(r, op); !st.ok()) {
      Fail(st);
      break;
    }
  }
  if (!failed_ && r.group_depth > 0)
    Fail(Status::InvalidArgument(fmt::format("rank {}: group_start without group_end", rank)));
  // A program's end waits for its device work, as process teardown does.
  if (!failed_) SyncDevice(r);
  r.finished = true;
}

}  // namespace myriad::emulator::engine
