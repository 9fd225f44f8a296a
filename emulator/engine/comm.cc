// Communication: collectives match by (communicator, sequence number) across all members,
// point-to-point by (communicator, sender, receiver, sequence number). When the last party
// arrives, netmodel times the call and every party's stream completes it together.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "engine/log.h"
#include "engine/simulation.h"

namespace myriad::emulator::engine {
namespace {

// Microseconds of the flow model as engine time, rounded up: an event at that time finds the
// flow (or transfer) it waits for done.
SimTime CeilPicos(double us) {
  return static_cast<SimTime>(std::ceil(us * static_cast<double>(kPicosPerMicro)));
}

bool IsReduction(netmodel::CollectiveOp op) {
  return op == netmodel::CollectiveOp::kAllReduce || op == netmodel::CollectiveOp::kReduce ||
         op == netmodel::CollectiveOp::kReduceScatter;
}
bool IsRooted(netmodel::CollectiveOp op) {
  return op == netmodel::CollectiveOp::kBroadcast || op == netmodel::CollectiveOp::kReduce ||
         op == netmodel::CollectiveOp::kGather || op == netmodel::CollectiveOp::kScatter;
}

// nccl-tests sizes: the whole buffer for collectives whose count is per rank.
std::uint64_t BufferBytes(const Op& call, int ranks) {
  const std::uint64_t bytes = call.count * static_cast<std::uint64_t>(SizeOf(call.dtype));
  switch (call.coll) {
    case netmodel::CollectiveOp::kAllGather:
    case netmodel::CollectiveOp::kReduceScatter:
    case netmodel::CollectiveOp::kAllToAll:
    case netmodel::CollectiveOp::kGather:
    case netmodel::CollectiveOp::kScatter:
      return bytes * static_cast<std::uint64_t>(ranks);
    default:
      return bytes;
  }
}

}  // namespace

std::string Simulation::Describe(const Op& call) const {
  const std::string& comm = names_.Name(call.comm);
  if (call.kind == OpKind::kSend || call.kind == OpKind::kRecv)
    return fmt::format("{} count={} dtype={} {} peer {} on '{}'", ToString(call.kind), call.count,
                       ToString(call.dtype), call.kind == OpKind::kSend ? "to" : "from", call.peer,
                       comm);
  std::string text = fmt::format("{} count={} dtype={}", netmodel::ToString(call.coll), call.count,
                                 ToString(call.dtype));
  if (IsReduction(call.coll)) text += fmt::format(" redop={}", ToString(call.redop));
  if (IsRooted(call.coll)) text += fmt::format(" root={}", call.root);
  return text + fmt::format(" on '{}'", comm);
}

Status Simulation::MemberOf(int rank, const Op& call, const Communicator** comm,
                            int* comm_rank) const {
  auto cit = comms_.find(call.comm);
  if (cit == comms_.end())
    return Status::InvalidArgument(
        fmt::format("rank {}: unknown communicator '{}'", rank, names_.Name(call.comm)));
  auto member = cit->second.comm_rank.find(rank);
  if (member == cit->second.comm_rank.end())
    return Status::InvalidArgument(fmt::format("rank {} calls {} but is not a member of '{}'", rank,
                                               Describe(call), names_.Name(call.comm)));
  *comm = &cit->second;
  if (comm_rank) *comm_rank = member->second;
  return Status::Ok();
}

Status Simulation::Arrive(int rank, int slot, const Op& call) {
  // Count x element size must be a buffer some GPU could hold: past 64 TiB a rank's buffer is
  // a typo, and nearer 2^64 the sizes wrapped around to nothing (a count of 2^63 - 1 gave a
  // total time of 0). 2^46 x any world of up to 2^17 ranks still fits in 64 bits.
  constexpr std::uint64_t kMaxCallBytes = std::uint64_t{1} << 46;
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(call.count, static_cast<std::uint64_t>(SizeOf(call.dtype)), &bytes) ||
      bytes > kMaxCallBytes)
    return Status::InvalidArgument(fmt::format(
        "rank {}: {}: a buffer of count {} x {} bytes is out of range (at most 64 TiB per rank)",
        rank, Describe(call), call.count, SizeOf(call.dtype)));
  return call.kind == OpKind::kCollective ? ArriveCollective(rank, slot, call)
                                          : ArriveP2p(rank, slot, call);
}

Status Simulation::ArriveCollective(int rank, int slot, const Op& call) {
  Rank& r = *ranks_[static_cast<size_t>(rank)];
  const Communicator* found = nullptr;
  if (Status st = MemberOf(rank, call, &found, nullptr); !st.ok()) return st;
  const Communicator& comm = *found;
  const int n = static_cast<int>(comm.ranks.size());
  if (IsRooted(call.coll) && (call.root < 0 || call.root >= n))
    return Status::InvalidArgument(fmt::format("rank {}: {}: root {} is not a rank of '{}' (0..{})",
                                               rank, Describe(call), call.root,
                                               names_.Name(call.comm), n - 1));
  const std::uint64_t seq = r.coll_seq[call.comm]++;
  const std::uint64_t key = (static_cast<std::uint64_t>(call.comm) << 40) | seq;
  CollInstance& inst = colls_[key];
  if (inst.arrived == 0) {
    inst.call = call;
    inst.first_rank = rank;
  } else {
    const Op& first = inst.call;
    const bool same = first.coll == call.coll && first.count == call.count &&
                      first.dtype == call.dtype &&
                      (!IsReduction(call.coll) || first.redop == call.redop) &&
                      (!IsRooted(call.coll) || first.root == call.root);
    if (!same)
      return Status::InvalidArgument(fmt::format(
          "mismatched collective #{} on communicator '{}': rank {} called {}, rank {} called {}",
          seq, names_.Name(call.comm), inst.first_rank, Describe(first), rank, Describe(call)));
  }
  inst.members.emplace_back(rank, slot);
  if (++inst.arrived < n) return Status::Ok();

  Result<netmodel::CollectiveEstimate> est = TimeCollective(comm, call);
  if (!est.ok())
    return Status::InvalidArgument(
        fmt::format("{} (#{}): {}", Describe(call), seq, est.status().message()));
  netmodel::CollectiveRequest request;
  request.op = call.coll;
  request.bytes = BufferBytes(call, comm.layout.ranks);
  request.ranks = comm.layout.ranks;
  // Under the flow model its rate is the one it would have alone.
  const CommLoad load = netmodel::FootprintOf(request, *est);
  if (flow_) {
    // Its flows share the links with everything else in flight; it ends when they do.
    std::vector<std::pair<int, int>> members = std::move(inst.members);
    colls_.erase(key);
    const EstimateKey stats{call.comm, static_cast<int>(call.coll), request.bytes};
    return StartTransfer(flow_->Start(ToMicros(now_), request, *est, comm.gpus), std::move(members),
                         call, &stats, load);
  }
  const SimTime end = now_ + FromMicros(est->time_us);
  Log().debug("{} (#{}): all {} ranks arrived; {}/{} takes {:.3f} us", Describe(call), seq, n,
              netmodel::ToString(est->algorithm), netmodel::ToString(est->protocol), est->time_us);
  const std::vector<std::pair<int, int>> members = std::move(inst.members);
  colls_.erase(key);
  for (const auto& [member, member_slot] : members) {
    std::string detail;
    if (ranks_[static_cast<size_t>(member)]->traced)
      detail = fmt::format("{} {} B {}/{} {:.3f} us", netmodel::ToString(call.coll),
                           BufferBytes(call, comm.layout.ranks), netmodel::ToString(est->algorithm),
                           netmodel::ToString(est->protocol), est->time_us);
    Resolve(member, member_slot, end, std::move(detail), load);
  }
  return Status::Ok();
}

// Rank folding: a mirror replays its source's send or receive. On a communicator it shares
// with its source (the world, a data-parallel group), the source named its peer as seen from
// its own place; the mirror's peer is the same rank shifted by as many ranks as the mirror is
// from its source (a ring's next rank stays the next). On its own replica's copy the peer's
// index already means the mirror's counterpart.
Status Simulation::MirrorPeer(int rank, const Communicator& comm, Op& call) const {
  const int source = ranks_[static_cast<size_t>(rank)]->source->mirror_of();
  if (source < 0 || source == rank) return Status::Ok();
  if (std::find(comm.ranks.begin(), comm.ranks.end(), source) == comm.ranks.end())
    return Status::Ok();  // its replica's copy
  const int n = static_cast<int>(comm.ranks.size());
  if (call.peer < 0 || call.peer >= n) return Status::Ok();  // ArriveP2p says what is wrong
  const long world = static_cast<long>(ranks_.size());
  const int peer_rank = comm.ranks[static_cast<size_t>(call.peer)];
  const int shifted =
      static_cast<int>((peer_rank + static_cast<long>(rank - source) + world) % world);
  const auto it = std::find(comm.ranks.begin(), comm.ranks.end(), shifted);
  if (it == comm.ranks.end())
    return Status::InvalidArgument(fmt::format(
        "rank {} (a mirror of rank {}): {}: its source's peer is rank {}, and the mirror's "
        "(shifted as far as the mirror is from its source) would be rank {}, which is not in "
        "'{}': this program's peers do not follow the fold (run it unfolded)",
        rank, source, Describe(call), peer_rank, shifted, names_.Name(call.comm)));
  call.peer = static_cast<int>(it - comm.ranks.begin());
  return Status::Ok();
}

Status Simulation::ArriveP2p(int rank, int slot, const Op& source_call) {
  Rank& r = *ranks_[static_cast<size_t>(rank)];
  const Communicator* found = nullptr;
  int me = 0;
  if (Status st = MemberOf(rank, source_call, &found, &me); !st.ok()) return st;
  const Communicator& comm = *found;
  const int n = static_cast<int>(comm.ranks.size());
  Op call = source_call;
  if (Status st = MirrorPeer(rank, comm, call); !st.ok()) return st;
  if (call.peer < 0 || call.peer >= n || call.peer == me)
    return Status::InvalidArgument(fmt::format("rank {}: {}: peer {} is not another rank of '{}'",
                                               rank, Describe(call), call.peer,
                                               names_.Name(call.comm)));
  const bool send = call.kind == OpKind::kSend;
  const int src = send ? me : call.peer;
  const int dst = send ? call.peer : me;
  const std::uint64_t pair =
      (static_cast<std::uint64_t>(call.comm) << 32) | static_cast<std::uint32_t>(call.peer);
  const std::uint64_t seq = send ? r.send_seq[pair]++ : r.recv_seq[pair]++;
  const auto key = std::make_tuple(call.comm, src, dst, seq);
  P2pInstance& inst = p2ps_[key];
  (send ? inst.send : inst.recv) = true;
  (send ? inst.send_rank : inst.recv_rank) = rank;
  (send ? inst.send_slot : inst.recv_slot) = slot;
  (send ? inst.send_op : inst.recv_op) = call;
  if (!inst.send || !inst.recv) return Status::Ok();

  const Op& s = inst.send_op;
  const Op& v = inst.recv_op;
  const std::uint64_t bytes = s.count * static_cast<std::uint64_t>(SizeOf(s.dtype));
  if (bytes != v.count * static_cast<std::uint64_t>(SizeOf(v.dtype)))
    return Status::InvalidArgument(
        fmt::format("mismatched send/recv #{} on communicator '{}': rank {} sends {} x {}, rank {} "
                    "receives {} x {}",
                    seq, names_.Name(call.comm), inst.send_rank, s.count, ToString(s.dtype),
                    inst.recv_rank, v.count, ToString(v.dtype)));
  netmodel::CollectiveRequest request;
  request.op = netmodel::CollectiveOp::kSendRecv;
  request.bytes = bytes;
  request.ranks = 2;
  const int src_gpu = workload_.gpu_of(comm.ranks[static_cast<size_t>(src)]);
  const int dst_gpu = workload_.gpu_of(comm.ranks[static_cast<size_t>(dst)]);
  auto est = model_.Estimate(request, model_.LayoutOf({src_gpu, dst_gpu}));
  if (!est.ok()) return est.status();
  const CommLoad load = netmodel::FootprintOf(request, *est);
  if (flow_) {
    const Op send_call = inst.send_op;
    std::vector<std::pair<int, int>> members = {{inst.send_rank, inst.send_slot},
                                                {inst.recv_rank, inst.recv_slot}};
    p2ps_.erase(key);
    return StartTransfer(
        flow_->StartSend(ToMicros(now_), src_gpu, dst_gpu, static_cast<double>(bytes), *est),
        std::move(members), send_call, nullptr, load);
  }
  const SimTime end = now_ + FromMicros(est->time_us);
  Log().debug("{} (#{}) matched by rank {}: {:.3f} us", Describe(s), seq, inst.recv_rank,
              est->time_us);
  const int send_rank = inst.send_rank, send_slot = inst.send_slot;
  const int recv_rank = inst.recv_rank, recv_slot = inst.recv_slot;
  p2ps_.erase(key);
  const std::string detail =
      fmt::format("{} B rank {} -> rank {} {:.3f} us", bytes, send_rank, recv_rank, est->time_us);
  Resolve(send_rank, send_slot, end, detail, load);
  Resolve(recv_rank, recv_slot, end, detail, load);
  return Status::Ok();
}

Status Simulation::StartTransfer(Result<std::uint64_t> id, std::vector<std::pair<int, int>> members,
                                 const Op& call, const EstimateKey* collective,
                                 const CommLoad& load) {
  if (!id.ok())
    return Status::InvalidArgument(fmt::format("{}: {}", Describe(call), id.status().message()));
  for (const auto& [member, slot] : members) BeginComm(member, slot, load);
  Transfer t;
  t.members = std::move(members);
  t.collective = collective != nullptr;
  if (collective) {
    t.key = *collective;
    t.what = fmt::format("{} {} B", netmodel::ToString(call.coll), t.key.bytes);
  } else {
    t.what = fmt::format("{} B rank {} -> rank {}", call.count * SizeOf(call.dtype),
                         t.members[0].first, t.members[1].first);
  }
  transfers_.emplace(*id, std::move(t));
  ScheduleNetwork();
  return Status::Ok();
}

// The flow model finished transfers by now: their members' ops end when it says (after the
// start-up latency and pipeline fill that follow the last flow).
void Simulation::AdvanceNetwork() {
  std::vector<netmodel::FlowModel::Done> done;
  flow_->AdvanceTo(ToMicros(now_), &done);
  for (const netmodel::FlowModel::Done& d : done) {
    auto it = transfers_.find(d.id);
    if (it == transfers_.end()) continue;
    const Transfer& t = it->second;
    const SimTime end = std::max(now_, CeilPicos(d.end_us));
    const SimTime took = FromMicros(d.time_us);
    if (t.collective) {
      auto& [total, longest] = flow_times_[t.key];
      total += took;
      longest = std::max(longest, took);
    }
    const std::string detail =
        fmt::format("{} {:.3f} us (flow; {:.3f} us alone, x{:.2f})", t.what, d.time_us,
                    d.uncontended_us, d.uncontended_us > 0 ? d.time_us / d.uncontended_us : 1.0);
    for (const auto& [member, slot] : t.members) Resolve(member, slot, end, detail);
    transfers_.erase(it);
  }
  ScheduleNetwork();
}

void Simulation::ScheduleNetwork() {
  const double next = flow_->NextEventUs();
  if (!std::isfinite(next)) return;
  // Rounded up to the picosecond: the flow model then finds the flow done.
  const SimTime at = std::max(now_, CeilPicos(next));
  events_.Push(at, EventType::kNetwork, 0, 0, ++network_generation_);
}

Result<netmodel::CollectiveEstimate> Simulation::TimeCollective(const Communicator& comm,
                                                                const Op& call) {
  // The GPUs it is timed on: more than its simulated members when replicas are folded.
  const int n = comm.layout.ranks;
  const std::uint64_t bytes = BufferBytes(call, n);
  const EstimateKey key{comm.name, static_cast<int>(call.coll), bytes};
  ++estimate_calls_[key];
  auto it = estimates_.find(key);
  if (it != estimates_.end()) return it->second;
  netmodel::CollectiveRequest request;
  request.op = call.coll;
  request.bytes = bytes;
  request.ranks = n;
  request.algorithms = comm.algorithms;
  request.protocols = comm.protocols;
  auto est = model_.Estimate(request, comm.layout);
  if (est.ok()) estimates_.emplace(key, *est);
  return est;
}

std::vector<std::string> Simulation::DeadlockReport() {
  std::vector<std::string> report = {fmt::format(
      "deadlock at {:.3f} us: every rank waits and no event is pending", ToMicros(now_))};
  int listed = 0, blocked = 0;
  for (const auto& rp : ranks_) {
    const Rank& r = *rp;
    if (r.finished || !r.source->Used()) continue;  // a GPU nobody used waits for no one
    ++blocked;
    if (listed >= 16) continue;
    ++listed;
    report.push_back(fmt::format("  rank {} (host at {:.3f} us) waits in {}", r.id,
                                 ToMicros(r.host), r.waiting_for));
    for (const Stream& s : r.streams) {
      if (s.queue.empty()) continue;
      const DeviceOp& d = s.queue.front();
      std::string what = d.op.kind == OpKind::kGroupEnd ? "an NCCL group"
                         : d.op.kind == OpKind::kCollective || d.op.kind == OpKind::kSend ||
                                 d.op.kind == OpKind::kRecv
                             ? Describe(d.op)
                             : std::string(ToString(d.op.kind));
      report.push_back(
          fmt::format("    stream {}: {} ({})", s.id, what,
                      d.start >= 0 ? "waiting for its peers" : "waiting for a dependency"));
    }
  }
  if (blocked > listed) report.push_back(fmt::format("  ... and {} more ranks", blocked - listed));
  // Who never arrived at each pending collective and point-to-point call.
  std::vector<std::string> lines;
  for (const auto& [key, inst] : colls_) {
    const Communicator& comm = comms_.at(inst.call.comm);
    std::vector<int> missing;
    for (int member : comm.ranks) {
      bool arrived = false;
      for (const auto& m : inst.members) arrived |= m.first == member;
      if (!arrived) missing.push_back(member);
    }
    lines.push_back(fmt::format("  {} (#{}): ranks {} never called it", Describe(inst.call),
                                key & ((1ull << 40) - 1), fmt::join(missing, ", ")));
  }
  for (const auto& [key, inst] : p2ps_) {
    const auto& [comm, src, dst, seq] = key;
    lines.push_back(fmt::format("  {} (#{}) on '{}': no matching {} from communicator rank {}",
                                inst.send ? "send" : "recv", seq, names_.Name(comm),
                                inst.send ? "recv" : "send", inst.send ? dst : src));
  }
  std::sort(lines.begin(), lines.end());
  report.insert(report.end(), lines.begin(), lines.end());
  return report;
}

}  // namespace myriad::emulator::engine
