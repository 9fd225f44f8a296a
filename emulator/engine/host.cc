// The host side of a logical rank: its fiber reads ops from the op source and plays them as
// the CUDA runtime and NCCL would: asynchronous calls enqueue device work, synchronising
// calls block the rank's host clock until the device catches up.
#include <fmt/format.h>

#include <boost/fiber/operations.hpp>
#include <mutex>

#include "engine/simulation.h"
#include "myriad/glob.h"

namespace myriad::emulator::engine {
namespace {

constexpr int kLegacySlot = 0;
}  // namespace

bool IsIterationMarker(std::string_view pattern, std::string_view label) {
  // "Train step" matches "Train step 12"; a pattern with '*' matches as a glob.
  if (pattern.find('*') != std::string_view::npos) return GlobMatch(pattern, label);
  return label.substr(0, pattern.size()) == pattern;
}

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
  // A full launch queue blocks the launch until the device completes its oldest op, as CUDA's
  // does; it also bounds the ops (and the queue's memory) a run holds per stream.
  const std::uint64_t limit = options_.max_queued_ops;
  if (limit > 0 && s.enqueued - s.completed >= limit)
    WaitStream(r, slot, s.enqueued - limit + 1, "launch queue full");
  r.host += options_.api_call_cost;
  if (r.host < now_) {  // a live thread behind virtual time (RunResult::late_ops)
    ++late_ops_;
    most_late_ = std::max(most_late_, now_ - r.host);
  }
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
      if (label.empty() || IsIterationMarker(options_.iteration_label, label))
        r.iteration_markers.push_back(r.host);
      if (r.traced) markers_.push_back({r.id, label.empty() ? "iteration" : label, r.host});
      return Status::Ok();
    }
    case OpKind::kMalloc: {
      r.host += options_.api_call_cost;
      // A sum past 2^64 is over any HBM too (it used to wrap around to a small number).
      std::uint64_t total = 0;
      const bool wrapped = __builtin_add_overflow(r.memory, op.bytes, &total);
      if (wrapped || static_cast<double>(total) > cluster_.gpu.hbm_bytes)
        return Status::InvalidArgument(fmt::format(
            "predicted out of memory on rank {} at {:.3f} us: malloc of {} bytes brings it to "
            "{} bytes, over the {:.0f} bytes of HBM of {} (peak {} bytes)",
            r.id, ToMicros(r.host), op.bytes, wrapped ? "more than 2^64" : fmt::format("{}", total),
            cluster_.gpu.hbm_bytes, cluster_.gpu.key,
            std::max(r.peak_memory, wrapped ? r.memory : total)));
      r.memory = total;
      r.peak_memory = std::max(r.peak_memory, r.memory);
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
    case OpKind::kEventQuery:
    case OpKind::kStreamQuery: {
      r.host += options_.api_call_cost;
      int slot = 0;
      std::uint64_t index = 0;
      if (Status st = QueryTarget(r, op, &slot, &index); !st.ok()) return st;
      Query(r, slot, index,
            op.kind == OpKind::kEventQuery ? fmt::format("event_query on event {}", op.event)
                                           : fmt::format("stream_query on stream {}", op.stream));
      return Status::Ok();
    }
    case OpKind::kEventElapsed: {
      r.host += options_.api_call_cost;
      auto start = r.events.find(op.event);
      auto end = r.events.find(op.event2);
      if (start == r.events.end() || end == r.events.end()) {
        r.reply.status = kErrorInvalidResourceHandle;
        return Status::Ok();
      }
      const Dep a = start->second, b = end->second;
      WaitStream(r, a.slot, a.index, fmt::format("event_elapsed on event {}", op.event));
      WaitStream(r, b.slot, b.index, fmt::format("event_elapsed on event {}", op.event2));
      r.reply.value = r.record_times[op.event2] - r.record_times[op.event];
      return Status::Ok();
    }
    case OpKind::kCommInit:
      r.host += options_.api_call_cost;
      return JoinCommunicator(r, op);
  }
  return Status::Ok();
}

Status Simulation::QueryTarget(Rank& r, const Op& op, int* slot, std::uint64_t* index) {
  *slot = 0;
  *index = 0;  // an event never recorded is complete
  if (op.kind == OpKind::kEventQuery) {
    auto it = r.events.find(op.event);
    if (it != r.events.end()) {
      *slot = it->second.slot;
      *index = it->second.index;
    }
    return Status::Ok();
  }
  if (Status st = SlotOf(r, op.stream, slot); !st.ok()) return st;
  *index = r.streams[static_cast<size_t>(*slot)].enqueued;
  return Status::Ok();
}

void Simulation::Query(Rank& r, int slot, std::uint64_t index, const std::string& what) {
  // Work already complete stays complete: the answer is "ready" at any later host time, and
  // waiting for the loop to reach this rank's clock could wait forever on a process whose
  // other thread waits for this one on the host (a barrier between threads).
  if (r.streams[static_cast<size_t>(slot)].completed >= index) {
    r.reply.value = 1;
    return;
  }
  // The answer at this host time needs every event up to it: let the loop catch up.
  ++r.pending_waits;
  events_.Push(r.host, EventType::kWake, r.id, 0);
  Block(r, what);
  Stream& s = r.streams[static_cast<size_t>(slot)];
  r.reply.value = s.completed >= index ? 1 : 0;
  // Not ready: the host's clock moves to the stream's next completion, so a polling loop
  // takes a few polls, not millions.
  if (s.completed < index) WaitStream(r, slot, s.completed + 1, what);
}

Status Simulation::StartPoll(Rank& r, const Op& op) {
  OpReply reply;
  reply.host_time = op.not_before + options_.api_call_cost;
  PendingPoll poll;
  poll.rank = r.id;
  poll.advance = op.repeated_poll;
  if (Status st = QueryTarget(r, op, &poll.slot, &poll.index); !st.ok()) return st;
  // The answer is what is done at the thread's time, whenever in real time the poll arrived:
  // work that completed then or before is ready; work the loop saw complete only after it, or
  // not yet although the loop is past that time, is not (a repeated poll is answered at the
  // work's completion, or at the stream's next one).
  const Stream& s = r.streams[static_cast<size_t>(poll.slot)];
  const SimTime at = reply.host_time;
  if (s.completed >= poll.index) {
    SimTime done = 0;  // an event never recorded is complete
    if (op.kind == OpKind::kStreamQuery) {
      done = poll.index == 0 ? 0 : s.last_completion;
    } else if (auto it = r.record_times.find(op.event); it != r.record_times.end()) {
      done = it->second;
    }
    reply.value = done <= at ? 1 : 0;
    if (reply.value == 0 && poll.advance) reply.host_time = done;
    r.source->Reply(op, reply);
    return Status::Ok();
  }
  if (now_ > at && !poll.advance) {
    reply.value = 0;
    r.source->Reply(op, reply);
    return Status::Ok();
  }
  poll.handle = r.source->DeferReply();
  const std::uint64_t id = ++last_poll_;
  if (now_ > at) poll.advance = false;  // the next completion answers it, ready or not
  polls_.emplace(id, poll);
  if (now_ > at) {
    // Not done at the thread's time: a repeated poll waits for the stream's next completion.
    r.streams[static_cast<size_t>(poll.slot)].waiters.push_back({s.completed + 1, kPollWaiter, id});
    return Status::Ok();
  }
  // The answer at the thread's time needs every event up to it, polls last (event_queue.h).
  events_.Push(at, EventType::kPoll, r.id, poll.slot, id);
  return Status::Ok();
}

void Simulation::AnswerPoll(std::uint64_t id) {
  auto it = polls_.find(id);
  if (it == polls_.end()) return;
  const PendingPoll poll = it->second;
  Rank& r = *ranks_[static_cast<size_t>(poll.rank)];
  Stream& s = r.streams[static_cast<size_t>(poll.slot)];
  OpReply reply;
  reply.host_time = now_;
  reply.value = s.completed >= poll.index ? 1 : 0;
  // A polling loop's "not ready" is answered at the stream's next completion, so the loop
  // takes a few polls, not millions.
  if (reply.value == 0 && poll.advance) {
    it->second.advance = false;
    s.waiters.push_back({s.completed + 1, kPollWaiter, id});
    return;
  }
  polls_.erase(it);
  r.source->ReplyLater(poll.handle, reply);
}

Status Simulation::JoinCommunicator(Rank& r, const Op& op) {
  const std::string name = names_.Name(op.comm);  // a copy: interning below may move it
  if (comms_.count(op.comm))
    return Status::InvalidArgument(
        fmt::format("rank {}: communicator '{}' already exists", r.id, name));
  const int size = static_cast<int>(op.count);
  PendingComm& pending = pending_comms_[op.comm];
  if (pending.members.empty()) pending.members.assign(static_cast<size_t>(size), -1);
  if (size < 1 || static_cast<int>(pending.members.size()) != size)
    return Status::InvalidArgument(
        fmt::format("rank {}: joins communicator '{}' of {} ranks, but others joined it with {}",
                    r.id, name, size, pending.members.size()));
  if (op.peer < 0 || op.peer >= size || pending.members[static_cast<size_t>(op.peer)] >= 0)
    return Status::InvalidArgument(
        fmt::format("rank {}: joins communicator '{}' as rank {}, which is {}", r.id, name, op.peer,
                    op.peer < 0 || op.peer >= size ? "out of range" : "taken"));
  pending.members[static_cast<size_t>(op.peer)] = r.id;
  pending.latest = std::max(pending.latest, r.host);
  const std::string selection = names_.Name(op.label);
  if (pending.selection_rank < 0) {
    pending.selection = selection;
    pending.selection_rank = r.id;
  } else if (selection != pending.selection) {
    auto show = [](const std::string& s) {
      const auto nl = s.find('\n');
      return fmt::format("NCCL_ALGO='{}' NCCL_PROTO='{}'", s.substr(0, nl),
                         nl == std::string::npos ? "" : s.substr(nl + 1));
    };
    return Status::InvalidArgument(fmt::format(
        "communicator '{}': rank {} has {} but rank {} has {} (NCCL reads them in every "
        "process; its members must agree)",
        name, r.id, show(selection), pending.selection_rank, show(pending.selection)));
  }
  // ncclCommSplit arrives as a join of "<parent>/split<k>" carrying (color, key).
  const bool split = name.find("/split") != std::string::npos;
  if (split) {
    pending.colors.resize(static_cast<size_t>(size), -1);
    pending.keys.resize(static_cast<size_t>(size), 0);
    pending.groups.resize(static_cast<size_t>(size), 0);
    pending.colors[static_cast<size_t>(op.peer)] = op.root;
    pending.keys[static_cast<size_t>(op.peer)] = op.event;
    pending.groups[static_cast<size_t>(op.peer)] = op.event2;
  }
  if (++pending.joined == size) {
    // Like ncclCommInitRank, a barrier: every member leaves when the last one has joined.
    if (split) {
      if (Status st = SplitCommunicator(name, pending); !st.ok()) return st;
    } else {
      Communicator comm;
      comm.name = op.comm;
      comm.ranks = pending.members;
      for (int i = 0; i < size; ++i) comm.comm_rank[comm.ranks[static_cast<size_t>(i)]] = i;
      comm.layout = model_.LayoutOf(comm.ranks);
      if (Status st = ApplySelection(pending, comm); !st.ok()) return st;
      comms_.emplace(op.comm, std::move(comm));
    }
    for (int member : pending.members) events_.Push(pending.latest, EventType::kWake, member, 0);
    pending_comms_.erase(op.comm);
  }
  ++r.pending_waits;
  Block(r, fmt::format("comm_init of '{}'", name));
  r.reply.value = r.split_result;
  return Status::Ok();
}

Status Simulation::ApplySelection(const PendingComm& pending, Communicator& comm) const {
  const std::string& s = pending.selection;
  const auto nl = s.find('\n');
  const std::string algo = s.substr(0, nl), proto = nl == std::string::npos ? "" : s.substr(nl + 1);
  const std::string where = fmt::format("communicator '{}' (rank {}'s environment)",
                                        names_.Name(comm.name), pending.selection_rank);
  if (!algo.empty()) {
    auto set = netmodel::ParseNcclAlgo(algo);
    if (!set.ok()) return Status::InvalidArgument(where + ": " + set.status().message());
    comm.algorithms = *set;
  }
  if (!proto.empty()) {
    auto set = netmodel::ParseNcclProto(proto);
    if (!set.ok()) return Status::InvalidArgument(where + ": " + set.status().message());
    comm.protocols = *set;
  }
  return Status::Ok();
}

Status Simulation::SplitCommunicator(const std::string& name, const PendingComm& pending) {
  // Members of each color, ordered by (key, parent rank), form "<name>/color<c>". Under rank
  // folding a mirror carries its source's color and key. Where the child's members are known
  // (PyTorch names them), the mirror says which group's copy it joins: "<name>/color<c>" or
  // "<name>/color<c>/replica<k>", k being the group's first replica. Otherwise a color with
  // one member in the live replica is a group across the replicas (a data-parallel one: one
  // child of them all); one with several lies inside each replica, whose mirrors get a child
  // of their own (docs/run.md, "Folding").
  std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> colors;  // (color, replica)
  std::map<int, int> live_members;                                         // per color
  for (size_t i = 0; i < pending.members.size(); ++i) {
    Rank& member = *ranks_[static_cast<size_t>(pending.members[i])];
    member.split_result = 0;  // NCCL_SPLIT_NOCOLOR: no child
    if (pending.colors[i] >= 0 && member.source->replica() == 0) ++live_members[pending.colors[i]];
  }
  for (size_t i = 0; i < pending.members.size(); ++i) {
    if (pending.colors[i] < 0) continue;
    const int replica = ranks_[static_cast<size_t>(pending.members[i])]->source->replica();
    const bool across = live_members[pending.colors[i]] <= 1;
    const int group = pending.groups[i] > 0 ? pending.groups[i] - 1 : across ? 0 : replica;
    colors[{pending.colors[i], group}].emplace_back(pending.keys[i], i);
  }
  for (auto& [group, members] : colors) {
    const auto [color, replica] = group;
    std::sort(members.begin(), members.end());
    Communicator child;
    child.name =
        names_.Intern(replica == 0 ? fmt::format("{}/color{}", name, color)
                                   : fmt::format("{}/color{}/replica{}", name, color, replica));
    for (size_t i = 0; i < members.size(); ++i) {
      const int global = pending.members[static_cast<size_t>(members[i].second)];
      child.ranks.push_back(global);
      child.comm_rank[global] = static_cast<int>(i);
      // The reply: child rank in the high half, child size in the low half.
      ranks_[static_cast<size_t>(global)]->split_result =
          (static_cast<std::int64_t>(i) << 32) | static_cast<std::int64_t>(members.size());
    }
    child.layout = model_.LayoutOf(child.ranks);
    if (Status st = ApplySelection(pending, child); !st.ok()) return st;
    comms_.emplace(child.name, std::move(child));
  }
  return Status::Ok();
}

void Simulation::WaitForProcess(Rank& r) {
  // The process is computing on the host: virtual time may not pass this rank's clock until
  // its next op arrives (engine.cc drains the inbox the I/O thread fills).
  r.awaiting_process = true;
  r.hold = r.source->HoldTime(r.host);
  if (r.hold != kNever) awaiting_.emplace(r.hold, r.id);
  ++r.pending_waits;
  Block(r, "its process");
}

void Simulation::RankMain(int rank) {
  Rank& r = *ranks_[static_cast<size_t>(rank)];
  r.key = &boost::this_fiber::properties<FiberKey>();
  r.key->rank = rank;
  r.key->time = r.host;
  r.source->SetWakeup([this, rank] { Notify(rank); });
  Op op;
  while (!failed_) {
    while (!failed_ && r.source->Pending()) WaitForProcess(r);
    if (failed_) break;
    Result<bool> next = r.source->Next(op);
    if (!next.ok()) {
      Fail(next.status());
      break;
    }
    if (!*next) break;
    // A live thread's poll (an event or stream query) answers that thread at its time, but
    // does not move the rank's host clock, does not stop the rank, and is not counted: how
    // often a thread polls (a watchdog's loop, a spin on cudaStreamQuery) follows real time,
    // so it must change neither the other threads' timing nor the report. The polling
    // thread's clock moves by the answer, and its next op carries it. (A trace's query is
    // its rank's host activity: there is no thread clock to carry it.) A poll nobody waits
    // for answers nothing.
    if (op.not_before >= 0 && (op.kind == OpKind::kEventQuery || op.kind == OpKind::kStreamQuery)) {
      if (!op.wants_reply) continue;
      if (Status st = StartPoll(r, op); !st.ok()) {
        Fail(st);
        break;
      }
      continue;
    }
    ++r.ops;
    if (op.not_before > r.host) r.host = op.not_before;
    r.reply = OpReply();
    if (Status st = Execute(r, op); !st.ok()) {
      Fail(st);
      break;
    }
    if (r.host >= kMaxSimTime) {
      Fail(Status::InvalidArgument(ClockBoundError(r, -1, &op)));
      break;
    }
    // A wait the run's failure ended did not succeed: the process hears why, not "done".
    if (failed_) break;
    if (op.wants_reply) {
      r.reply.host_time = r.host;
      r.source->Reply(op, r.reply);
    }
  }
  if (!failed_ && r.group_depth > 0)
    Fail(Status::InvalidArgument(fmt::format("rank {}: group_start without group_end", rank)));
  // A program's end waits for its device work, as process teardown does.
  if (!failed_) SyncDevice(r);
  r.finished = true;
}

}  // namespace myriad::emulator::engine
