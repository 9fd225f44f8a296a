// Recording a run's op streams (`myriad run --record`): every op a source hands the engine is
// kept, and communicators created at run time become declarations, so the trace replays the
// same device work on any cluster.
#include <fmt/format.h>

#include <map>
#include <mutex>

#include "myriad/emulator/trace.h"

namespace myriad::emulator {
namespace {

class RecordingSource : public OpSource {
 public:
  RecordingSource(std::unique_ptr<OpSource> inner, RecordingWorkload& recorder, int rank)
      : inner_(std::move(inner)), recorder_(recorder), rank_(rank) {}
  Result<bool> Next(Op& op) override {
    Result<bool> next = inner_->Next(op);
    if (next.ok() && *next) recorder_.Record(rank_, op);
    return next;
  }
  bool Pending() override { return inner_->Pending(); }
  SimTime HoldTime(SimTime host) override { return inner_->HoldTime(host); }
  void SetWakeup(std::function<void()> wakeup) override { inner_->SetWakeup(std::move(wakeup)); }
  bool Used() const override { return inner_->Used(); }
  bool MayResume() override { return inner_->MayResume(); }
  int mirror_of() const override { return inner_->mirror_of(); }
  int replica() const override { return inner_->replica(); }
  void Reply(const Op& op, const OpReply& reply) override {
    recorder_.Replied(rank_, op, reply);
    inner_->Reply(op, reply);
  }
  // Polls are not recorded (docs/run.md): their answers pass through.
  std::uint64_t DeferReply() override { return inner_->DeferReply(); }
  void ReplyLater(std::uint64_t handle, const OpReply& reply) override {
    inner_->ReplyLater(handle, reply);
  }

 private:
  std::unique_ptr<OpSource> inner_;
  RecordingWorkload& recorder_;
  int rank_;
};

}  // namespace

RecordingWorkload::RecordingWorkload(Workload& inner)
    : inner_(inner), ops_(static_cast<size_t>(inner.world_size())) {}

Result<std::unique_ptr<OpSource>> RecordingWorkload::OpenRank(int rank) {
  auto source = inner_.OpenRank(rank);
  if (!source.ok()) return source.status();
  return std::unique_ptr<OpSource>(
      std::make_unique<RecordingSource>(std::move(source).value(), *this, rank));
}

void RecordingWorkload::Record(int rank, const Op& op) {
  std::vector<Op>& ops = ops_[static_cast<size_t>(rank)];
  switch (op.kind) {
    case OpKind::kCommInit:
      // Becomes a declaration; ncclCommSplit's children are learnt from its reply.
      if (names().Name(op.comm).find("/split") == std::string::npos) {
        auto& members = comms_[op.comm];
        members.resize(static_cast<size_t>(op.count), -1);
        if (op.peer >= 0 && op.peer < static_cast<int>(members.size()))
          members[static_cast<size_t>(op.peer)] = rank;
      }
      return;
    case OpKind::kEventElapsed: {
      // It waited for both events.
      Op sync;
      sync.kind = OpKind::kEventSync;
      sync.event = op.event;
      ops.push_back(sync);
      sync.event = op.event2;
      ops.push_back(sync);
      return;
    }
    case OpKind::kStreamQuery:
    case OpKind::kEventQuery:
      // Polls follow real time (how often a thread looks) and move no rank's clock: a trace
      // keeps neither (traces have no stream query at all).
      return;
    default: {
      Op copy = op;
      copy.wants_reply = false;
      copy.not_before = -1;
      ops.push_back(copy);
    }
  }
}

void RecordingWorkload::Replied(int rank, const Op& op, const OpReply& reply) {
  if (op.kind != OpKind::kCommInit || reply.value < 0) return;
  const std::string name = names().Name(op.comm);  // a copy: Intern below may move it
  if (name.find("/split") == std::string::npos) return;
  const NameId child = names().Intern(fmt::format("{}/color{}", name, op.root));
  auto& members = comms_[child];
  members.resize(static_cast<size_t>(reply.value & 0xffffffff), -1);
  const auto child_rank = static_cast<size_t>(reply.value >> 32);
  if (child_rank < members.size()) members[child_rank] = rank;
}

Status RecordingWorkload::Write(const std::string& path) {
  InMemoryWorkload recorded(world_size(), "recorded " + inner_.description());
  NameTable& from = names();
  NameTable& to = recorded.names();
  auto remap = [&](NameId id) { return id == 0 ? NameId{0} : to.Intern(from.Name(id)); };
  for (const CommunicatorSpec& spec : inner_.communicators())
    recorded.AddCommunicator({remap(spec.name), spec.ranks, spec.gpus});
  for (const auto& [name, members] : comms_) {
    for (int member : members)
      if (member < 0)
        return Status::InvalidArgument(fmt::format(
            "cannot record communicator '{}': not every member joined it", from.Name(name)));
    recorded.AddCommunicator({remap(name), members, {}});
  }
  for (int rank = 0; rank < world_size(); ++rank) {
    for (Op op : ops_[static_cast<size_t>(rank)]) {
      op.name = remap(op.name);
      op.comm = remap(op.comm);
      op.label = remap(op.label);
      recorded.AddOp(rank, op);
    }
  }
  const bool jsonl = path.size() >= 6 && path.compare(path.size() - 6, 6, ".jsonl") == 0;
  return jsonl ? WriteJsonlTrace(recorded, path) : WriteBinaryTrace(recorded, path);
}

}  // namespace myriad::emulator
