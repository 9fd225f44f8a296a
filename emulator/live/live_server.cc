// The live side of `myriad run`: a Boost.Asio server on a Unix socket in a private directory.
// The I/O thread only reads frames and queues ops; the engine thread converts them to Ops
// (interning names) and writes replies, so the engine's state has one owner.
// Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility>.
#include <utility>
// clang-format off: the include above must come first.
#include <boost/asio.hpp>
// clang-format on

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <thread>
#include <tuple>
#include <vector>

#include "collective_data.h"
#include "frames.h"
#include "kernel_code_index.h"
#include "myriad/emulator/live.h"
#include "protocol/wire.h"
#include "timing/launch_guess.h"
#include "timing/pytorch_kernels.h"

namespace myriad::emulator {
namespace {

namespace asio = boost::asio;
using Socket = asio::local::stream_protocol::socket;

class Connection;

// What the engine may assume about a process's host threads. A thread that sent an op it
// waits on is blocked: it sends nothing more until the engine answers, at the answer's
// virtual time. A running thread may send ops at any time from its clock on. The server's
// lock guards every process's threads and every rank's op queue: a batch's ops and the
// thread time it announces must appear together, or the engine could see the new time (or a
// blocked thread) before the ops that come earlier and let virtual time pass them.
struct ProcessState {
  struct Thread {
    std::uint32_t version = 0;    // of the latest host-state report applied
    bool host_blocked = false;    // waits on the host for another thread, or sleeps
    bool engine_blocked = false;  // waits for the engine's answer to an op
    bool exited = false;
    bool outside = false;  // its wait ends by something Myriad does not see
    // Small collectives' data it waits for (CollectiveData): it holds nothing meanwhile, and
    // resumes at the latest member's clock, which the members still to come hold back.
    int exchanges = 0;
    SimTime time = 0;
    std::shared_ptr<Connection> connection;  // the thread's own, for its answers
    // Its pending sleep or timed wait, if any (-1: none): in LiveState::timers.
    SimTime timer_deadline = -1;
    std::uint32_t timer_version = 0;
    // Connections holding a batch of this thread until a report of the version given
    // arrives (it comes over another connection: the waker's or the creator's).
    std::vector<std::pair<std::uint32_t, std::weak_ptr<Connection>>> deferred;
  };
  ProcessPlacement placement;
  // Thread 0 (the first to call into the shims) runs from time 0 before it says anything;
  // every later thread is announced by the thread that creates it.
  std::map<std::uint32_t, Thread> threads = {{0, Thread{}}};
  // Ops taken from each thread so far (OpsHeader::ops_sent), and the connections holding a
  // batch until a thread's count reaches a position (OpsHeader::after_ops). Kept apart from
  // `threads`, so that waiting for a thread Myriad has not heard of yet does not make one.
  std::map<std::uint32_t, std::uint64_t> ops_taken;
  std::multimap<std::uint32_t, std::pair<std::uint64_t, std::weak_ptr<Connection>>> ordered;
  bool closed = false;  // its ranks have ended

  static constexpr SimTime kNeverTime = std::numeric_limits<SimTime>::max();
  // The earliest virtual time this process could send ops (the lock held): the clock of its
  // earliest running thread. A thread that waits (on the engine, on another thread, or in a
  // sleep the engine times) holds nothing: whatever resumes it runs no earlier than the
  // thread or the event that does.
  // Whether a thread waits on something outside Myriad's view (so the process may send work
  // again however long the engine has nothing to do).
  bool MayResumeLocked() const {
    if (closed) return false;
    for (const auto& [id, t] : threads)
      if (t.outside && t.host_blocked && !t.exited) return true;
    return false;
  }
  SimTime HoldLocked() const {
    if (closed) return kNeverTime;
    SimTime earliest = kNeverTime;
    for (const auto& [id, t] : threads)
      if (!t.host_blocked && !t.engine_blocked && !t.exited && t.exchanges == 0)
        earliest = std::min(earliest, t.time);
    return earliest;
  }
};

// A thread asleep until `deadline`: the engine answers it when virtual time gets there.
struct Timer {
  SimTime deadline = 0;
  int process = 0;
  std::uint32_t thread = 0;
  std::uint32_t version = 0;  // the sleep's report; a later report about the thread cancels it
  // A sleep (not a timed wait, which a waker may end): the engine may fire it after a moment
  // of real silence although threads still hold time back (engine.cc, kSleeperPatience).
  bool sleep = true;
  bool operator<(const Timer& o) const {
    return std::tie(deadline, process, thread, version) <
           std::tie(o.deadline, o.process, o.thread, o.version);
  }
};

// What the I/O thread and the engine share: the processes and the ranks' op queues.
struct LiveState {
  std::mutex mu;
  std::vector<ProcessState> processes;
  std::set<Timer> timers;
  std::uint64_t bytes_read_back = 0;  // device-to-host copies: the program reads zeros
  std::map<std::string, std::uint64_t> cuda_errors;  // what CUDA calls returned, by name
  // Rank folding: communicators' members as PyTorch named them (a split's child under its
  // name "<parent>/split<k>/color<c>"), from the live ranks' joins.
  std::map<std::string, std::vector<int>> comm_members;
};

// "0,8,16" as ranks; empty when malformed.
std::vector<int> ParseMembers(const std::string& text) {
  std::vector<int> members;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    int value = 0;
    const auto [ptr, ec] = std::from_chars(text.data() + start, text.data() + end, value);
    if (ec != std::errc() || ptr != text.data() + end) return {};
    members.push_back(value);
    start = end + 1;
  }
  return members;
}

// The ops of one GPU: one logical rank, fed by the process that uses it.
class LiveSource : public OpSource {
 public:
  LiveSource(NameTable& names, timing::KernelClassCache& kernel_classes,
             KernelCodeIndex& kernel_code, int gpu, std::vector<int> candidates, LiveState& state)
      : names_(names),
        kernel_classes_(kernel_classes),
        kernel_code_(kernel_code),
        gpu_(gpu),
        candidates_(std::move(candidates)),
        state_(state) {}

  SimTime HoldTime(SimTime host) override { return HoldTimeFor(0, host); }
  bool Pending() override { return PendingFor(0); }
  // For consumer `c` (0: the rank itself; others: its mirrors, which see the same ops).
  SimTime HoldTimeFor(std::size_t c, SimTime host) {
    std::lock_guard<std::mutex> lock(state_.mu);
    // Ops that arrived since the engine last asked Pending(): it will find them next.
    if (cursors_[c] < end_locked()) return host;
    SimTime hold = ProcessState::kNeverTime;
    ForFeedersLocked([&](const ProcessState& p) { hold = std::min(hold, p.HoldLocked()); });
    return hold == ProcessState::kNeverTime ? hold : std::max(host, hold);
  }
  bool PendingFor(std::size_t c) {
    std::lock_guard<std::mutex> lock(state_.mu);
    return cursors_[c] == end_locked() && !closed_;
  }
  // A mirror of this rank reads the same ops (added before any op arrives): its consumer.
  std::size_t AddMirror() {
    std::lock_guard<std::mutex> lock(state_.mu);
    cursors_.push_back(front_index_);
    std::lock_guard<std::mutex> wake(wake_mu_);
    wakeups_.emplace_back();
    return cursors_.size() - 1;
  }
  void SetWakeupFor(std::size_t c, std::function<void()> wakeup) {
    std::lock_guard<std::mutex> lock(wake_mu_);
    wakeups_[c] = std::move(wakeup);
  }
  Result<bool> NextFor(std::size_t c, Op& op);
  bool MayResume() override {
    std::lock_guard<std::mutex> lock(state_.mu);
    if (closed_) return false;
    bool may = false;
    ForFeedersLocked([&](const ProcessState& p) { may = may || p.MayResumeLocked(); });
    return may;
  }
  bool Used() const override {
    std::lock_guard<std::mutex> lock(state_.mu);
    return owner_ >= 0;
  }
  void SetWakeup(std::function<void()> wakeup) override { SetWakeupFor(0, std::move(wakeup)); }
  Result<bool> Next(Op& op) override { return NextFor(0, op); }
  void Reply(const Op& op, const OpReply& reply) override;
  std::uint64_t DeferReply() override {
    std::lock_guard<std::mutex> lock(state_.mu);
    deferred_.emplace(++last_deferred_, std::make_pair(last_thread_, last_from_));
    return last_deferred_;
  }
  void ReplyLater(std::uint64_t handle, const OpReply& reply) override;

  // I/O thread side, with the state's lock held. Claims the GPU for `process` (false if
  // another process uses it; `*owner` says which), then queues the batch's ops.
  bool ClaimLocked(int process, int* owner) {
    if (owner_ < 0) owner_ = process;
    *owner = owner_;
    return owner_ == process;
  }
  void PushLocked(const wire::OpsHeader& header, const wire::WireOp* ops,
                  const std::shared_ptr<Connection>& from);
  // A live rank's join names its communicator's members (rank folding): kept for the data of
  // small collectives, whose mirrors' places follow from them.
  void RecordMembersLocked(const wire::WireOp& op, Connection& from);
  int owner_locked() const { return owner_; }
  const std::vector<int>& candidates() const { return candidates_; }
  // A process started by one that sees this GPU sees it too (the state's lock held).
  void AddCandidateLocked(int process) { candidates_.push_back(process); }
  // Something about its processes changed (a thread blocked or resumed): re-evaluate.
  void Poke() { Wake(); }
  // What to call when a reply resumes one of the process's threads (pokes its siblings).
  void SetResume(std::function<void(int)> resume) { resume_ = std::move(resume); }
  void CloseLocked(std::string error) {
    closed_ = true;
    if (error_.empty()) error_ = std::move(error);
  }

 private:
  // Calls `f` on each process that may still send this GPU work (state's lock held): its
  // owner, or, while nobody has used it, every process that sees it.
  template <typename F>
  void ForFeedersLocked(F f) const {
    if (owner_ >= 0) {
      f(state_.processes[static_cast<size_t>(owner_)]);
      return;
    }
    for (int p : candidates_) f(state_.processes[static_cast<size_t>(p)]);
  }

  // Held while waking, so once the engine clears the wakeup no call into it is in flight.
  void Wake() {
    std::lock_guard<std::mutex> lock(wake_mu_);
    for (const auto& wakeup : wakeups_)
      if (wakeup) wakeup();
  }
  std::uint64_t end_locked() const { return front_index_ + queue_.size(); }

  struct Queued {
    wire::WireOp op;
    std::uint32_t thread;
    SimTime thread_time;
    std::shared_ptr<Connection> from;  // its names are this connection's
    // The op as the engine sees it, made by the first consumer to read it (engine thread).
    bool converted = false;
    Op converted_op;
    std::size_t readers = 0;  // consumers that have read it
  };
  // Makes the engine's op from what the process sent (engine thread).
  Status Convert(Queued& q);

  NameTable& names_;
  timing::KernelClassCache& kernel_classes_;  // shared by all sources; engine thread only
  KernelCodeIndex& kernel_code_;              // shared by all sources
  const int gpu_;
  std::vector<int> candidates_;  // the processes that see this GPU (the state's lock)
  LiveState& state_;             // its mu guards the members up to error_
  int owner_ = -1;               // the process that uses it
  // Ops not yet read by every consumer: the first has index front_index_; consumer c reads
  // index cursors_[c] next (a deque keeps references to its elements as it grows).
  std::deque<Queued> queue_;
  std::uint64_t front_index_ = 0;
  std::vector<std::uint64_t> cursors_ = {0};
  std::uint32_t last_thread_ = 0;  // the thread of the op Next() returned last
  std::shared_ptr<Connection> last_from_;
  // Answers the engine gives later (DeferReply): the thread and its connection, by handle.
  std::map<std::uint64_t, std::pair<std::uint32_t, std::shared_ptr<Connection>>> deferred_;
  std::uint64_t last_deferred_ = 0;
  void Answer(std::uint32_t thread, std::shared_ptr<Connection> connection, const OpReply& reply);
  std::function<void(int)> resume_;
  bool closed_ = false;
  std::string error_;
  std::mutex wake_mu_;
  std::vector<std::function<void()>> wakeups_ = {{}};  // per consumer
};

// The engine owns what OpenRank returns and destroys it when the run ends, while the I/O
// thread may still feed the source: both hold it through this.
class SharedSource : public OpSource {
 public:
  explicit SharedSource(std::shared_ptr<LiveSource> source) : source_(std::move(source)) {}
  Result<bool> Next(Op& op) override { return source_->Next(op); }
  bool Pending() override { return source_->Pending(); }
  SimTime HoldTime(SimTime host) override { return source_->HoldTime(host); }
  bool Used() const override { return source_->Used(); }
  bool MayResume() override { return source_->MayResume(); }
  void SetWakeup(std::function<void()> wakeup) override { source_->SetWakeup(std::move(wakeup)); }
  void Reply(const Op& op, const OpReply& reply) override { source_->Reply(op, reply); }
  std::uint64_t DeferReply() override { return source_->DeferReply(); }
  void ReplyLater(std::uint64_t handle, const OpReply& reply) override {
    source_->ReplyLater(handle, reply);
  }

 private:
  std::shared_ptr<LiveSource> source_;
};

// A mirror (rank folding): another replica's rank that replays what its source rank's process
// sends, on its own GPU, as the source's other consumer; it joins the communicators its source
// joins in its own place (InferMirrorMembership) and answers no process.
class MirrorSource : public OpSource {
 public:
  MirrorSource(std::shared_ptr<LiveSource> source, std::size_t consumer, int rank,
               const FoldPlan& plan, NameTable& names)
      : source_(std::move(source)), consumer_(consumer), rank_(rank), plan_(plan), names_(names) {}
  Result<bool> Next(Op& op) override {
    auto next = source_->NextFor(consumer_, op);
    if (!next.ok() || !*next) return next;
    // Its source's polls answer its source's threads; a mirror has none to answer.
    if (op.kind == OpKind::kEventQuery || op.kind == OpKind::kStreamQuery) op.wants_reply = false;
    if (op.kind == OpKind::kCommInit) {
      if (Status st = Join(op); !st.ok()) return st;
    } else if (op.comm != 0) {
      op.comm = Translated(op.comm);
    }
    return true;
  }
  bool Pending() override { return source_->PendingFor(consumer_); }
  SimTime HoldTime(SimTime host) override { return source_->HoldTimeFor(consumer_, host); }
  bool Used() const override { return source_->Used(); }
  bool MayResume() override { return source_->MayResume(); }
  void SetWakeup(std::function<void()> wakeup) override {
    source_->SetWakeupFor(consumer_, std::move(wakeup));
  }
  int mirror_of() const override { return plan_.source_of(rank_); }
  int replica() const override { return plan_.replica_of(rank_); }

 private:
  // The name of its group's copy of communicator `name`, `copy` being the group's first
  // replica (the engine names a split's children so too: SplitCommunicator).
  static std::string CopyName(const std::string& name, int copy) {
    return fmt::format("{}/replica{}", name, copy);
  }
  // The communicator the mirror uses for its source's `comm`: its group's copy (one it made,
  // or a split's child the engine made for its replica), or the same one.
  NameId Translated(NameId comm) {
    auto it = copies_.find(comm);
    if (it != copies_.end()) return it->second;
    const NameId copy = names_.Find(CopyName(names_.Name(comm), plan_.replica_of(rank_)));
    // A split's children exist once the split is done, before any op can use them.
    const NameId used = copy != 0 ? copy : comm;
    copies_.emplace(comm, used);
    return used;
  }
  Status Refused(const Status& why) const {
    return Status::InvalidArgument(fmt::format("rank {} (a mirror of rank {}): {}", rank_,
                                               plan_.source_of(rank_), why.message()));
  }
  Status Join(Op& op) {
    const std::string name = names_.Name(op.comm);
    std::vector<int> members;
    if (op.members != 0) {
      members = ParseMembers(names_.Name(op.members));
      if (members.empty())
        return Refused(Status::InvalidArgument(
            fmt::format("communicator '{}': its member list '{}' is not ranks separated by commas",
                        name, names_.Name(op.members))));
    }
    const int replica = plan_.replica_of(rank_);
    if (const auto split = name.rfind("/split"); split != std::string::npos) {
      // A split of the world or of a group across the replicas (the engine gives the mirror
      // its group: SplitCommunicator) joins as the parent would; a split of a replica's own
      // communicator is not supported yet.
      const NameId parent = names_.Find(name.substr(0, split));
      if (parent == 0 || Translated(parent) != parent)
        return Status::Unsupported(fmt::format(
            "rank {} (a mirror of rank {}): under rank folding, ncclCommSplit of a communicator "
            "inside a replica is not supported yet (communicator '{}')",
            rank_, plan_.source_of(rank_), name));
      auto in_parent =
          InferMirrorMembership(plan_, name, static_cast<int>(op.count), op.peer, replica);
      if (!in_parent.ok()) return Refused(in_parent.status());
      op.peer = in_parent->rank;
      if (op.root < 0) return Status::Ok();  // NCCL_SPLIT_NOCOLOR: no child
      const std::string child = name + "/color" + std::to_string(op.root);
      if (members.empty()) {
        // Without the child's members the engine places the mirror by its source's color: a
        // color with one live member spans the replicas, one with several lies inside each.
        // Only the data-parallel axis folds so.
        if (plan_.folded_names() != "dp")
          return Status::Unsupported(fmt::format(
              "rank {} (a mirror of rank {}): ncclCommSplit of '{}' under --fold {}: Myriad "
              "needs the child's members to place the mirrors, and only PyTorch's hook gives "
              "them (split_group, DeviceMesh); fold dp alone here",
              rank_, plan_.source_of(rank_), name, plan_.folded_names()));
        return Status::Ok();
      }
      const auto source = std::find(members.begin(), members.end(), plan_.source_of(rank_));
      if (source == members.end())
        return Refused(Status::InvalidArgument(fmt::format(
            "communicator '{}': its member list (from PyTorch) lacks rank {}, which joined it",
            child, plan_.source_of(rank_))));
      auto in_child =
          InferMirrorMembership(plan_, child, static_cast<int>(members.size()),
                                static_cast<int>(source - members.begin()), replica, &members);
      if (!in_child.ok()) return Refused(in_child.status());
      op.event2 = in_child->copy + 1;  // the engine groups the child's members by (color, copy)
      copies_[names_.Intern(child)] =
          names_.Intern(in_child->own_copy ? CopyName(child, in_child->copy) : child);
      return Status::Ok();
    }
    auto membership = InferMirrorMembership(plan_, name, static_cast<int>(op.count), op.peer,
                                            replica, members.empty() ? nullptr : &members);
    if (!membership.ok()) return Refused(membership.status());
    op.peer = membership->rank;
    if (membership->own_copy) {
      const NameId copy = names_.Intern(CopyName(name, membership->copy));
      copies_[op.comm] = copy;
      op.comm = copy;
    }
    return Status::Ok();
  }

  std::shared_ptr<LiveSource> source_;
  const std::size_t consumer_;
  const int rank_;
  const FoldPlan plan_;
  NameTable& names_;
  std::map<NameId, NameId> copies_;  // its source's communicator -> its replica's copy
};

// One process's connection.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Socket socket, class Server& server)
      : socket_(std::move(socket)), server_(server), hello_timer_(socket_.get_executor()) {}
  // A connection that does not say which process it is within kHelloSeconds is dropped, so
  // a stray client cannot hold the run open.
  static constexpr int kHelloSeconds = 10;
  void Start() {
    auto self = shared_from_this();
    hello_timer_.expires_after(std::chrono::seconds(kHelloSeconds));
    hello_timer_.async_wait([this, self](boost::system::error_code ec) {
      if (!ec && !identified_)
        Fail(fmt::format("no hello within {} s of connecting", kHelloSeconds));
    });
    ReadHeader();
  }
  // The string a process-local name id stands for (any thread).
  Result<std::string> Name(std::uint32_t id) {
    std::lock_guard<std::mutex> lock(names_mu_);
    if (id >= names_.size() || !known_[id])
      return Status::InvalidArgument(
          fmt::format("process {} used name id {} before defining it", process_, id));
    return names_[id];
  }
  // Sends a frame (engine thread; the client is blocked waiting for it).
  void Send(wire::FrameType type, const std::string& payload) {
    std::string frame;
    wire::Append(frame, wire::FrameHeader{type, static_cast<std::uint32_t>(payload.size())});
    frame += payload;
    std::lock_guard<std::mutex> lock(write_mu_);
    boost::system::error_code ec;
    asio::write(socket_, asio::buffer(frame), ec);  // a dead process is noticed by the reader
  }
  // Answers the thread this connection belongs to (engine thread).
  void SendReply(SimTime host_time, std::int32_t status = 0, std::int64_t value = 0) {
    wire::Reply r;
    r.host_time_ps = host_time;
    r.status = status;
    r.value = value;
    std::string payload;
    wire::Append(payload, r);
    Send(wire::FrameType::kReply, payload);
  }
  // Answers a sleep or a timed wait (engine thread).
  void SendTimer(std::uint32_t version, SimTime time) {
    wire::TimerReply r;
    r.version = version;
    r.time = time;
    std::string payload;
    wire::Append(payload, r);
    Send(wire::FrameType::kTimer, payload);
  }
  int process() const { return process_; }
  int pid() const { return pid_; }
  auto executor() { return socket_.get_executor(); }
  // I/O thread: the run failed; tell the process and hang up.
  void Abort(const std::string& why);
  // I/O thread: handles the frames it held back (from a batch sent before the report that lets
  // its thread run arrived).
  void Resume() {
    paused_ = false;
    while (!paused_ && !backlog_.empty() && socket_.is_open()) {
      auto [header, payload] = std::move(backlog_.front());
      backlog_.pop_front();
      if (Status st = Handle(header, payload); !st.ok()) return Fail(st.message());
    }
  }
  // The engine's id for a name id of this connection (engine thread only).
  Result<NameId> Intern(std::uint32_t id, NameTable& names) {
    if (id < name_cache_.size() && name_cache_[id] != 0) return name_cache_[id];
    auto name = Name(id);
    if (!name.ok()) return name.status();
    if (id >= name_cache_.size()) name_cache_.resize(id + 1, 0);
    return name_cache_[id] = names.Intern(*name);
  }

 private:
  void ReadHeader();
  void ReadPayload();
  // Handles one frame; a batch that must wait for its thread's report pauses the connection.
  Status Handle(const wire::FrameHeader& header, const std::string& payload);
  void Fail(const std::string& why);

  Socket socket_;
  class Server& server_;
  wire::FrameHeader header_{};
  std::string payload_;
  int process_ = -1;
  int pid_ = 0;
  bool identified_ = false;  // hello handled (or the connection ended first)
  // While paused, frames read are kept in order until Resume (the first is the held batch).
  bool paused_ = false;
  std::deque<std::pair<wire::FrameHeader, std::string>> backlog_;
  std::mutex names_mu_;
  std::vector<std::string> names_;
  std::vector<bool> known_;
  std::mutex write_mu_;
  std::vector<NameId> name_cache_;  // name id -> engine NameId (engine thread only)
  asio::steady_timer hello_timer_;
};

class Server : public LiveWorkload {
 public:
  explicit Server(const LiveOptions& options) : options_(options), acceptor_(io_) {
    data_.SetFold(options.fold);
    data_.SetMembers(&state_.comm_members);
    int world = 0;
    for (const ProcessPlacement& p : options.placement)
      world = std::max(world, p.first_gpu + p.visible);
    state_.processes.resize(options.placement.size());
    std::vector<std::vector<int>> candidates(static_cast<size_t>(world));
    for (size_t p = 0; p < options.placement.size(); ++p) {
      const ProcessPlacement& place = options.placement[p];
      state_.processes[p].placement = place;
      for (int g = place.first_gpu; g < place.first_gpu + place.visible; ++g)
        candidates[static_cast<size_t>(g)].push_back(static_cast<int>(p));
    }
    for (int g = 0; g < world; ++g) {
      sources_.push_back(std::make_shared<LiveSource>(names_, kernel_classes_, kernel_code_, g,
                                                      candidates[static_cast<size_t>(g)], state_));
      sources_.back()->SetResume([this](int process) { PokeProcess(process); });
      // Rank folding: each live rank's mirrors read its ops as consumers 1..replicas-1.
      if (options.fold.folded() && options.fold.is_live(g))
        for (int replica = 1; replica < options.fold.replicas; ++replica)
          sources_.back()->AddMirror();
    }
    const size_t n = options.placement.size();
    connected_.assign(n, 0);
    ended_.assign(n, false);
    told_.assign(n, false);
  }
  ~Server() override { Stop(); }

  Status Listen() {
    char pattern[] = "/tmp/myriad-XXXXXX";
    if (::mkdtemp(pattern) == nullptr)
      return Status::Internal(
          fmt::format("cannot create a private directory: {}", std::strerror(errno)));
    dir_ = pattern;  // mkdtemp makes it 0700
    path_ = dir_ + "/socket";
    boost::system::error_code ec;
    asio::local::stream_protocol::endpoint endpoint(path_);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) acceptor_.non_blocking(true, ec);  // AcceptWaiting must never block
    if (ec) return Status::Internal(fmt::format("cannot listen on {}: {}", path_, ec.message()));
    Accept();
    thread_ = std::thread([this] { io_.run(); });
    return Status::Ok();
  }

  int world_size() const override {
    return options_.fold.folded() ? options_.fold.world : static_cast<int>(sources_.size());
  }
  const std::vector<CommunicatorSpec>& communicators() const override { return comms_; }
  NameTable& names() override { return names_; }
  std::string description() const override { return options_.description; }
  Result<std::unique_ptr<OpSource>> OpenRank(int rank) override {
    // The engine and the I/O thread share each source.
    if (rank < 0 || rank >= world_size() || opened_.count(rank))
      return Status::Internal(fmt::format("rank {} opened twice", rank));
    opened_.insert(rank);
    const FoldPlan& fold = options_.fold;
    if (fold.folded() && !fold.is_live(rank)) {
      const int source = fold.source_of(rank);
      if (source >= static_cast<int>(sources_.size()))
        return Status::InvalidArgument(fmt::format(
            "rank {} would mirror rank {}, which no live process drives", rank, source));
      // Its consumer of the source's ops was added with the source (before any op came).
      return std::unique_ptr<OpSource>(std::make_unique<MirrorSource>(
          sources_[static_cast<size_t>(source)], static_cast<std::size_t>(fold.replica_of(rank)),
          rank, fold, names_));
    }
    return std::unique_ptr<OpSource>(
        std::make_unique<SharedSource>(sources_[static_cast<size_t>(rank)]));
  }
  const std::string& socket_path() const override { return path_; }
  // A process's ranks close once it has ended (the launcher saw it exit, or its connection
  // reached end of file) and its connection is closed, after every op it sent: closing at
  // the exit could lose ops still unread in the socket.
  void ProcessExited(int process) override {
    asio::post(io_, [this, process] { Ended(process); });
  }
  void Abort(const std::string& why) override {
    asio::post(io_, [this, why] {
      for (const auto& weak : connections_)
        if (auto connection = weak.lock()) connection->Abort(why);
      connections_.clear();
    });
  }
  void Shutdown(const std::string& why) override {
    asio::post(io_, [this, why] {
      for (int p = 0; p < processes(); ++p) CloseProcess(p, why);
    });
  }
  SimTime NextTimer() override {
    std::lock_guard<std::mutex> lock(state_.mu);
    return state_.timers.empty() ? std::numeric_limits<SimTime>::max()
                                 : state_.timers.begin()->deadline;
  }
  SimTime NextSleep() override {
    std::lock_guard<std::mutex> lock(state_.mu);
    for (const Timer& timer : state_.timers)
      if (timer.sleep) return timer.deadline;
    return std::numeric_limits<SimTime>::max();
  }
  bool AnyOutsideWait() override {
    std::lock_guard<std::mutex> lock(state_.mu);
    for (const ProcessState& p : state_.processes)
      if (p.MayResumeLocked()) return true;
    return false;
  }
  // Engine thread: answers every sleeper whose time has come; it runs again from then.
  void FireTimers(SimTime now) override {
    struct Answer {
      std::shared_ptr<Connection> connection;
      std::uint32_t version;
      SimTime time;
    };
    std::vector<Answer> answers;
    std::vector<int> woken;
    {
      std::lock_guard<std::mutex> lock(state_.mu);
      while (!state_.timers.empty() && state_.timers.begin()->deadline <= now) {
        const Timer timer = *state_.timers.begin();
        state_.timers.erase(state_.timers.begin());
        ProcessState& process = state_.processes[static_cast<size_t>(timer.process)];
        ProcessState::Thread& t = process.threads[timer.thread];
        if (t.version != timer.version || process.closed) continue;  // moved on since
        t.timer_deadline = -1;
        t.host_blocked = false;
        t.time = std::max(t.time, timer.deadline);
        answers.push_back({t.connection, timer.version, t.time});
        woken.push_back(timer.process);
      }
    }
    for (const Answer& a : answers)
      if (a.connection) a.connection->SendTimer(a.version, a.time);
    for (int p : woken) PokeProcess(p);
  }
  std::uint64_t bytes_read_back() const override {
    std::lock_guard<std::mutex> lock(state_.mu);
    return state_.bytes_read_back;
  }
  std::map<std::string, std::uint64_t> cuda_errors() const override {
    std::lock_guard<std::mutex> lock(state_.mu);
    return state_.cuda_errors;
  }
  bool WasTold(int process) const override {
    std::lock_guard<std::mutex> lock(told_mu_);
    return process >= 0 && static_cast<size_t>(process) < told_.size() &&
           told_[static_cast<size_t>(process)];
  }
  // I/O thread: `process` was sent the reason the run ended; its exit is a consequence.
  void Told(int process) {
    if (process < 0 || process >= processes()) return;
    std::lock_guard<std::mutex> lock(told_mu_);
    told_[static_cast<size_t>(process)] = true;
  }
  void Stop() override {
    if (stopped_) return;
    stopped_ = true;
    io_.stop();
    if (thread_.joinable()) thread_.join();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  int processes() const { return static_cast<int>(options_.placement.size()); }
  // I/O thread.
  // I/O thread: a connection says which process it is. Returns its process index: the
  // hello's, or for a descendant of that process (torchrun's workers) one of its own, the
  // same for every connection of its pid.
  Result<int> Bind(const wire::Hello& hello) {
    if (hello.magic != wire::kMagic || hello.version != wire::kVersion)
      return Status::InvalidArgument("a client that does not speak Myriad's protocol version");
    if (hello.process < 0 || hello.process >= processes())
      return Status::InvalidArgument(
          fmt::format("process index {} is outside 0..{}", hello.process, processes() - 1));
    const ProcessPlacement place = options_.placement[static_cast<size_t>(hello.process)];
    if (hello.devices != place.visible)
      return Status::InvalidArgument(
          fmt::format("process {} sees {} devices, the launch gave it {}", hello.process,
                      hello.devices, place.visible));
    int process = hello.process;
    if (hello.descendant != 0) {
      auto known = descendants_.find(hello.pid);
      if (known != descendants_.end()) {
        process = known->second;
      } else {
        process = processes();
        descendants_[hello.pid] = process;
        options_.placement.push_back(place);
        connected_.push_back(0);
        ended_.push_back(false);
        descendant_.resize(static_cast<size_t>(process) + 1, false);
        descendant_[static_cast<size_t>(process)] = true;
        {
          std::lock_guard<std::mutex> told(told_mu_);
          told_.push_back(false);
        }
        std::lock_guard<std::mutex> lock(state_.mu);
        state_.processes.emplace_back();
        state_.processes.back().placement = place;
        for (int d = 0; d < place.visible; ++d) Source(process, d)->AddCandidateLocked(process);
        // A launcher (torchrun) that never used CUDA itself holds no virtual time: its work
        // comes from its children. Should it call CUDA later, its reports take over.
        ProcessState& parent = state_.processes[static_cast<size_t>(hello.process)];
        if (connected_[static_cast<size_t>(hello.process)] == 0) {
          for (auto& [id, t] : parent.threads) {
            if (t.version != 0) continue;
            t.host_blocked = true;
            t.outside = true;
          }
        }
      }
    }
    {
      std::lock_guard<std::mutex> lock(state_.mu);
      if (state_.processes[static_cast<size_t>(process)].closed)
        return Status::InvalidArgument(
            fmt::format("process {} connected after its ranks ended", process));
    }
    // Every host thread of the shims connects on its own.
    ++connected_[static_cast<size_t>(process)];
    if (hello.pid > 0) kernel_code_.AddProcess(hello.pid);
    return process;
  }
  // I/O thread: a process loaded a module from a file, whose code Myriad reads.
  void ModuleLoaded(int pid, std::uint32_t id, const std::string& path) {
    kernel_code_.AddModuleFile(pid, id, path);
  }
  void DeviceContents(int pid, std::uint32_t id, std::string bytes) {
    kernel_code_.AddContents(pid, id, std::move(bytes));
  }
  void ModulePtx(int pid, std::uint32_t id, std::string ptx) {
    kernel_code_.AddModulePtx(pid, id, std::move(ptx));
  }
  // I/O thread: a connection said who it is (or ended without saying).
  void Identified() {
    --unidentified_;
    CloseEnded();
  }
  // I/O thread: the connection of `process` closed.
  void Disconnected(int process) {
    // A descendant has ended when its last connection closes: the launcher does not watch it.
    if (--connected_[static_cast<size_t>(process)] == 0 &&
        static_cast<size_t>(process) < descendant_.size() &&
        descendant_[static_cast<size_t>(process)])
      ended_[static_cast<size_t>(process)] = true;
  }
  void Ended(int process) {
    if (process < 0 || process >= processes()) return;
    AcceptWaiting();  // an ended process's connect(), if any, is in the backlog by now
    ended_[static_cast<size_t>(process)] = true;
    CloseEnded();
  }
  // The source of the GPU that device `device` of `process` is, or nullptr if it has none.
  LiveSource* Source(int process, int device) {
    const ProcessPlacement& place = options_.placement[static_cast<size_t>(process)];
    if (device < 0 || device >= place.visible) return nullptr;
    return sources_[static_cast<size_t>(place.first_gpu + device)].get();
  }
  LiveState& state() { return state_; }
  // The small collectives' data (I/O thread only).
  CollectiveData& data() { return data_; }
  // Every rank the process could feed re-evaluates how far the engine may go without it.
  void PokeProcess(int process) {
    const ProcessPlacement& place = options_.placement[static_cast<size_t>(process)];
    for (int d = 0; d < place.visible; ++d) Source(process, d)->Poke();
  }
  void CloseProcess(int process, const std::string& error) {
    if (process < 0 || process >= processes()) return;
    {
      std::lock_guard<std::mutex> lock(state_.mu);
      state_.processes[static_cast<size_t>(process)].closed = true;
      const ProcessPlacement& place = options_.placement[static_cast<size_t>(process)];
      for (int d = 0; d < place.visible; ++d) {
        LiveSource* source = Source(process, d);
        const int owner = source->owner_locked();
        if (owner == process || (owner < 0 && !error.empty())) {
          source->CloseLocked(error);  // a failure fails the run, whatever the process used
        } else if (owner < 0) {
          // Nobody used it: it ends once no process that sees it can.
          bool open = false;
          for (int p : source->candidates())
            open |= !state_.processes[static_cast<size_t>(p)].closed;
          if (!open) source->CloseLocked({});
        }
      }
    }
    PokeProcess(process);
  }

 private:
  void Accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, Socket socket) {
      if (ec == asio::error::operation_aborted) return;  // stopping
      if (ec) {
        // Out of file descriptors, most likely: the processes that cannot connect could
        // never be timed, so the run fails now, saying why, rather than wait for them.
        const std::string why = fmt::format(
            "cannot accept a process's connection: {}{}", ec.message(),
            ec == asio::error::no_descriptors ? " (raise the open-file limit, ulimit -n)" : "");
        for (int p = 0; p < processes(); ++p) CloseProcess(p, why);
        return;
      }
      Adopt(std::move(socket));
      Accept();
    });
  }
  void Adopt(Socket socket) {
    // Only processes of our own user may talk to us.
    ucred cred{};
    socklen_t length = sizeof(cred);
    if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0 ||
        cred.uid != ::getuid())
      return;
    ++unidentified_;
    auto connection = std::make_shared<Connection>(std::move(socket), *this);
    connections_.push_back(connection);
    connection->Start();
  }
  // Takes every connection already in the listen backlog now, not when the reactor gets to it.
  void AcceptWaiting() {
    for (;;) {
      const int fd =
          ::accept4(acceptor_.native_handle(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      Socket socket(io_);
      boost::system::error_code ec;
      socket.assign(asio::local::stream_protocol(), fd, ec);
      if (ec) {
        ::close(fd);
        continue;
      }
      Adopt(std::move(socket));
    }
  }
  // Closes the ended processes no connection (said or not yet said hello) may still feed.
  void CloseEnded() {
    if (unidentified_ > 0) return;
    for (int p = 0; p < processes(); ++p) {
      const auto i = static_cast<size_t>(p);
      bool closed = false;
      {
        std::lock_guard<std::mutex> lock(state_.mu);
        closed = state_.processes[i].closed;
      }
      if (ended_[i] && connected_[i] == 0 && !closed) CloseProcess(p, {});
    }
  }

  LiveOptions options_;
  asio::io_context io_;
  asio::local::stream_protocol::acceptor acceptor_;
  std::thread thread_;
  std::string dir_, path_;
  bool stopped_ = false;
  NameTable names_;
  timing::KernelClassCache kernel_classes_;
  KernelCodeIndex kernel_code_;
  std::vector<CommunicatorSpec> comms_;
  mutable LiveState state_;
  CollectiveData data_;
  std::vector<std::shared_ptr<LiveSource>> sources_;  // one per GPU any process sees
  std::set<int> opened_;                              // ranks the engine has opened
  // Per process (I/O thread only): its open connections (one per host thread that spoke),
  // whether it has ended.
  std::vector<int> connected_;
  std::vector<bool> ended_;
  std::map<int, int> descendants_;  // pid -> process index of the launched processes' children
  std::vector<bool> descendant_;    // per process: one of those
  int unidentified_ = 0;            // accepted connections that have not said hello yet
  mutable std::mutex told_mu_;
  std::vector<bool> told_;  // per process: it was sent the reason the run ended
  std::vector<std::weak_ptr<Connection>> connections_;  // for Abort
};

void Connection::ReadHeader() {
  auto self = shared_from_this();
  asio::async_read(socket_, asio::buffer(&header_, sizeof(header_)),
                   [this, self](boost::system::error_code ec, std::size_t) {
                     if (ec) return Fail({});  // the process closed its end
                     // Bounded by what the frame's type allows before anything is allocated.
                     const std::uint32_t limit = wire::MaxPayload(header_.type);
                     if (header_.length > limit)
                       return Fail(fmt::format("a frame of {} bytes (limit {} for its type)",
                                               header_.length, limit));
                     payload_.resize(header_.length);
                     ReadPayload();
                   });
}

void Connection::ReadPayload() {
  auto self = shared_from_this();
  asio::async_read(socket_, asio::buffer(payload_.data(), payload_.size()),
                   [this, self](boost::system::error_code ec, std::size_t) {
                     if (ec) return Fail("the connection broke mid-message");
                     if (paused_) {
                       backlog_.emplace_back(header_, std::move(payload_));
                     } else if (Status st = Handle(header_, payload_); !st.ok()) {
                       return Fail(st.message());
                     }
                     ReadHeader();
                   });
}

Status Connection::Handle(const wire::FrameHeader& header, const std::string& payload) {
  switch (header.type) {
    case wire::FrameType::kHello: {
      wire::Hello hello;
      if (process_ >= 0) return Status::InvalidArgument("a malformed hello");
      MYRIAD_RETURN_IF_ERROR(frames::DecodeHello(payload, &hello));
      auto bound = server_.Bind(hello);
      Status st = bound.ok() ? Status::Ok() : bound.status();
      if (bound.ok()) process_ = *bound, pid_ = hello.pid;
      identified_ = true;
      hello_timer_.cancel();
      server_.Identified();
      return st;
    }
    case wire::FrameType::kNames: {
      std::vector<std::pair<std::uint32_t, std::string>> names;
      MYRIAD_RETURN_IF_ERROR(frames::DecodeNames(payload, &names));
      std::lock_guard<std::mutex> lock(names_mu_);
      for (auto& [id, name] : names) {
        // Ids are handed out in order from 1: a name defines the next id, or an old one.
        if (id > std::max<size_t>(names_.size(), 1))
          return Status::InvalidArgument("a malformed name table");
        if (id >= names_.size()) {
          names_.resize(id + 1);
          known_.resize(id + 1, false);
        }
        names_[id] = std::move(name);
        known_[id] = true;
      }
      return Status::Ok();
    }
    case wire::FrameType::kOps: {
      wire::OpsHeader ops_header;
      std::vector<wire::WireOp> ops;
      if (process_ < 0) return Status::InvalidArgument("ops before hello");
      MYRIAD_RETURN_IF_ERROR(frames::DecodeOps(payload, &ops_header, &ops));
      if (ops_header.device == wire::kNoDevice) {
        // What follows on this connection comes after another thread's first ops.
        std::lock_guard<std::mutex> lock(server_.state().mu);
        ProcessState& state = server_.state().processes[static_cast<size_t>(process_)];
        auto taken = state.ops_taken.find(ops_header.after_thread);
        if (taken == state.ops_taken.end() || taken->second < ops_header.after_ops) {
          state.ordered.emplace(ops_header.after_thread,
                                std::make_pair(ops_header.after_ops, weak_from_this()));
          paused_ = true;
          backlog_.emplace_front(header, payload);
        }
        return Status::Ok();
      }
      LiveSource* source = server_.Source(process_, ops_header.device);
      if (source == nullptr)
        return Status::InvalidArgument(
            fmt::format("ops for device {}, which it does not have", ops_header.device));
      {
        std::lock_guard<std::mutex> lock(server_.state().mu);
        ProcessState::Thread& sender =
            server_.state().processes[static_cast<size_t>(process_)].threads[ops_header.thread];
        if (ops_header.state_version > sender.version) {
          sender.deferred.emplace_back(ops_header.state_version, weak_from_this());
          paused_ = true;
          backlog_.emplace_front(header, payload);
          return Status::Ok();
        }
        int owner = -1;
        if (!source->ClaimLocked(process_, &owner))
          return Status::InvalidArgument(fmt::format(
              "sent work for its device {}, GPU {} of the cluster, which process {} uses (a "
              "GPU belongs to one process: pick devices by LOCAL_RANK)",
              ops_header.device,
              server_.state().processes[static_cast<size_t>(process_)].placement.first_gpu +
                  ops_header.device,
              owner));
        ProcessState& state = server_.state().processes[static_cast<size_t>(process_)];
        ProcessState::Thread& thread = state.threads[ops_header.thread];
        thread.time = std::max(thread.time, ops_header.thread_time_ps);
        thread.engine_blocked = !ops.empty() && (ops.back().flags & wire::kWantsReply) != 0;
        thread.connection = shared_from_this();
        source->PushLocked(ops_header, ops.data(), thread.connection);
        // Batches that were to come after these ops go on now.
        std::uint64_t& taken = state.ops_taken[ops_header.thread];
        taken = std::max(taken, ops_header.ops_sent);
        auto [first, last] = state.ordered.equal_range(ops_header.thread);
        for (auto it = first; it != last;) {
          if (it->second.first > taken) {
            ++it;
            continue;
          }
          if (auto c = it->second.second.lock()) asio::post(c->executor(), [c] { c->Resume(); });
          it = state.ordered.erase(it);
        }
      }
      server_.PokeProcess(process_);  // wakes the source that got the ops too
      return Status::Ok();
    }
    case wire::FrameType::kData: {
      wire::DataHeader h;
      if (process_ < 0) return Status::InvalidArgument("data before hello");
      std::string comm, bytes;
      MYRIAD_RETURN_IF_ERROR(frames::DecodeData(payload, &h, &comm, &bytes));
      // One lock for the call and the answers it completes: the engine must never see every
      // member waiting (holding nothing) when the last call has in fact just completed the
      // exchange, or virtual time could pass the clock the members resume at.
      std::optional<Result<std::vector<CollectiveData::Answer>>> answers;
      std::set<int> resumed;
      {
        // A call that waits for its answer holds nothing until the answer comes.
        std::lock_guard<std::mutex> lock(server_.state().mu);
        ProcessState::Thread& caller =
            server_.state().processes[static_cast<size_t>(process_)].threads[h.thread];
        caller.time = std::max(caller.time, h.time_ps);
        if (h.kind != wire::DataKind::kSend) ++caller.exchanges;
        answers.emplace(server_.data().Add(h, comm, bytes, shared_from_this()));
        // Each member answered runs again from the latest call's clock, before anything
        // lets virtual time pass it.
        if (answers->ok()) {
          for (const CollectiveData::Answer& a : **answers) {
            if (!a.to) continue;  // a mirror's: nobody waits for it
            const int to = std::static_pointer_cast<Connection>(a.to)->process();
            ProcessState::Thread& t =
                server_.state().processes[static_cast<size_t>(to)].threads[a.thread];
            t.exchanges = std::max(0, t.exchanges - 1);
            t.time = std::max(t.time, a.time);
            resumed.insert(to);
          }
        }
      }
      if (!answers->ok()) {
        server_.CloseProcess(process_,
                             fmt::format("process {}: {}", process_, answers->status().message()));
        return Status::Ok();
      }
      for (const CollectiveData::Answer& a : **answers) {
        if (!a.to) continue;
        wire::DataReply reply;
        reply.bytes = static_cast<std::uint32_t>(a.bytes.size());
        reply.tag = a.tag;
        reply.time_ps = a.time;
        std::string out;
        wire::Append(out, reply);
        out += a.bytes;
        std::static_pointer_cast<Connection>(a.to)->Send(wire::FrameType::kDataReply, out);
      }
      resumed.insert(process_);
      for (int p : resumed) server_.PokeProcess(p);
      return Status::Ok();
    }
    case wire::FrameType::kThread: {
      wire::ThreadState report;
      if (process_ < 0) return Status::InvalidArgument("a thread report before hello");
      MYRIAD_RETURN_IF_ERROR(frames::DecodeThread(payload, &report));
      std::vector<std::shared_ptr<Connection>> resumed;
      {
        std::lock_guard<std::mutex> lock(server_.state().mu);
        ProcessState& state = server_.state().processes[static_cast<size_t>(process_)];
        ProcessState::Thread& thread = state.threads[report.thread];
        // Reports about one thread can come over several connections (its waker's, its
        // creator's): the latest version wins.
        if (report.version > thread.version) {
          thread.version = report.version;
          // Whatever it waited for before is over: its timer must not move virtual time.
          if (thread.timer_deadline >= 0) {
            server_.state().timers.erase(
                {thread.timer_deadline, process_, report.thread, thread.timer_version});
            thread.timer_deadline = -1;
          }
          // A timed wait's time is its deadline, not its clock: a waker may end it sooner.
          if (report.state != wire::HostState::kWaitingUntil)
            thread.time = std::max(thread.time, report.time);
          const bool timed = report.state == wire::HostState::kSleeping ||
                             report.state == wire::HostState::kWaitingUntil;
          thread.host_blocked = timed || report.state == wire::HostState::kBlocked ||
                                report.state == wire::HostState::kOutside;
          thread.outside = report.state == wire::HostState::kOutside;
          thread.exited = report.state == wire::HostState::kExited;
          if (timed) {
            thread.connection = shared_from_this();  // the answer goes to the sleeper
            server_.state().timers.insert({report.time, process_, report.thread, report.version,
                                           report.state == wire::HostState::kSleeping});
            thread.timer_deadline = report.time;
            thread.timer_version = report.version;
          }
          // The thread's batches that waited for this report go on now.
          auto& d = thread.deferred;
          for (auto it = d.begin(); it != d.end();) {
            if (it->first > thread.version) {
              ++it;
              continue;
            }
            if (auto c = it->second.lock()) resumed.push_back(std::move(c));
            it = d.erase(it);
          }
        }
      }
      for (auto& c : resumed) asio::post(c->executor(), [c] { c->Resume(); });
      server_.PokeProcess(process_);
      return Status::Ok();
    }
    case wire::FrameType::kModule: {
      std::uint32_t id = 0;
      std::string path;
      if (process_ < 0) return Status::InvalidArgument("a module before hello");
      MYRIAD_RETURN_IF_ERROR(frames::DecodeModule(payload, &id, &path));
      if (pid_ > 0) server_.ModuleLoaded(pid_, id, path);
      return Status::Ok();
    }
    case wire::FrameType::kModulePtx: {
      std::uint32_t id = 0;
      std::string ptx;
      if (process_ < 0) return Status::InvalidArgument("a module before hello");
      MYRIAD_RETURN_IF_ERROR(frames::DecodeModulePtx(payload, &id, &ptx));
      if (pid_ > 0) server_.ModulePtx(pid_, id, std::move(ptx));
      return Status::Ok();
    }
    case wire::FrameType::kDeviceContents: {
      std::uint32_t id = 0;
      std::string bytes;
      if (process_ < 0) return Status::InvalidArgument("device contents before hello");
      MYRIAD_RETURN_IF_ERROR(frames::DecodeDeviceContents(payload, &id, &bytes));
      if (pid_ > 0) server_.DeviceContents(pid_, id, std::move(bytes));
      return Status::Ok();
    }
    case wire::FrameType::kErrors: {
      std::vector<std::pair<std::uint32_t, std::string>> errors;
      if (process_ < 0) return Status::InvalidArgument("errors before hello");
      MYRIAD_RETURN_IF_ERROR(frames::DecodeErrors(payload, &errors));
      std::lock_guard<std::mutex> lock(server_.state().mu);
      for (auto& [count, name] : errors) server_.state().cuda_errors[std::move(name)] += count;
      return Status::Ok();
    }
    default:
      return Status::InvalidArgument(
          fmt::format("an unknown frame type {}", static_cast<std::uint32_t>(header.type)));
  }
}

void Connection::Abort(const std::string& why) {
  if (!socket_.is_open()) return;  // its process ended before the run failed: not told
  Send(wire::FrameType::kFatal, why);
  server_.Told(process_);
  boost::system::error_code ec;
  socket_.close(ec);
}

void Connection::Fail(const std::string& why) {
  // The process learns why before the connection closes (its shim prints it and exits).
  hello_timer_.cancel();
  if (!why.empty()) {
    Send(wire::FrameType::kFatal, why);
    server_.Told(process_);
  }
  boost::system::error_code ec;
  socket_.close(ec);
  if (!identified_) {
    identified_ = true;
    server_.Identified();
  }
  if (process_ < 0) return;
  server_.Disconnected(process_);
  if (why.empty())
    server_.Ended(process_);  // the process closed its end: it exited, or is exiting
  else
    server_.CloseProcess(process_, fmt::format("process {}: {}", process_, why));
}

void LiveSource::PushLocked(const wire::OpsHeader& header, const wire::WireOp* ops,
                            const std::shared_ptr<Connection>& from) {
  constexpr std::uint8_t kMemcpyKind = static_cast<std::uint8_t>(OpKind::kMemcpy);
  constexpr std::uint8_t kDeviceToHost = static_cast<std::uint8_t>(MemcpyKind::kDeviceToHost);
  for (std::uint32_t i = 0; i < header.count; ++i) {
    if (ops[i].kind == kMemcpyKind && ops[i].copy_kind == kDeviceToHost)
      state_.bytes_read_back += ops[i].bytes * cursors_.size();  // its mirrors read as much
    if (ops[i].kind == static_cast<std::uint8_t>(wire::WireKind::kCommInit) && ops[i].event2 != 0 &&
        from)
      RecordMembersLocked(ops[i], *from);
    queue_.push_back({ops[i], header.thread, header.thread_time_ps, from, false, Op(), 0});
  }
}

void LiveSource::RecordMembersLocked(const wire::WireOp& op, Connection& from) {
  auto comm = from.Name(op.comm);
  auto members = from.Name(static_cast<std::uint32_t>(op.event2));
  if (!comm.ok() || !members.ok()) return;  // Convert reports the undefined name
  std::string name = *comm;
  if (name.find("/split") != std::string::npos) name += "/color" + std::to_string(op.root);
  state_.comm_members[name] = ParseMembers(*members);
}

Result<bool> LiveSource::NextFor(std::size_t c, Op& op) {
  Queued* entry = nullptr;
  {
    std::lock_guard<std::mutex> lock(state_.mu);
    if (cursors_[c] == end_locked()) {
      if (!error_.empty()) return Status::InvalidArgument(error_);
      return false;
    }
    entry = &queue_[static_cast<std::size_t>(cursors_[c] - front_index_)];
    if (c == 0) {
      last_thread_ = entry->thread;
      last_from_ = entry->from;
    }
  }
  // Only the engine thread converts and pops, so the entry stays put meanwhile.
  if (!entry->converted) {
    if (Status st = Convert(*entry); !st.ok()) return st;
    entry->converted = true;
  }
  op = entry->converted_op;
  std::lock_guard<std::mutex> lock(state_.mu);
  ++cursors_[c];
  ++entry->readers;
  // Consumers read in order, so the front goes once all have read it.
  while (!queue_.empty() && queue_.front().readers == cursors_.size()) {
    queue_.pop_front();
    ++front_index_;
  }
  return true;
}

Status LiveSource::Convert(Queued& q) {
  const wire::WireOp& w = q.op;
  const SimTime thread_time = q.thread_time;
  const std::shared_ptr<Connection>& connection = q.from;
  Op& op = q.converted_op;
  auto intern = [&](std::uint32_t id) { return connection->Intern(id, names_); };
  op = Op();
  switch (static_cast<wire::WireKind>(w.kind)) {
    case wire::WireKind::kCommInit:
      op.kind = OpKind::kCommInit;
      if (w.event2 != 0) {
        auto members = intern(static_cast<std::uint32_t>(w.event2));
        if (!members.ok()) return members.status();
        op.members = *members;
      }
      break;
    case wire::WireKind::kEventElapsed:
      op.kind = OpKind::kEventElapsed;
      break;
    case wire::WireKind::kStreamQuery:
      op.kind = OpKind::kStreamQuery;
      break;
    case wire::WireKind::kCommDestroy:
      op.kind = OpKind::kHost;
      op.duration = 0;
      break;
    default:
      if (w.kind >= kNumOpKinds)
        return Status::InvalidArgument(
            fmt::format("rank {}: its process sent an unknown op kind {}", gpu_, w.kind));
      op.kind = static_cast<OpKind>(w.kind);
  }
  if (w.coll >= netmodel::kNumCollectiveOps || w.dtype > 11 || w.redop > 4 || w.copy_kind > 3 ||
      w.gemm_dtype > static_cast<int>(DataType::kTfloat32) || w.gemm_fast_accum > 1)
    return Status::InvalidArgument(fmt::format("rank {}: its process sent a malformed op", gpu_));
  op.stream = w.stream;
  if (w.name != 0) {
    auto name = intern(w.name);
    if (!name.ok()) return name.status();
    op.name = op.label = *name;
  }
  if (w.comm != 0) {
    auto comm = intern(w.comm);
    if (!comm.ok()) return comm.status();
    op.comm = *comm;
  }
  op.grid = {w.grid[0], w.grid[1], w.grid[2]};
  op.block = {w.block[0], w.block[1], w.block[2]};
  op.shared_mem = w.shared_mem;
  // A communicator's destruction is a host op of no duration (set above).
  if (op.kind != OpKind::kHost) op.duration = w.duration_ps;
  op.gemm = {w.gemm_m,
             w.gemm_n,
             w.gemm_k,
             w.gemm_batch,
             static_cast<DataType>(w.gemm_dtype),
             w.gemm_fast_accum != 0};
  op.bytes = w.bytes;
  op.copy_kind = static_cast<MemcpyKind>(w.copy_kind);
  op.async = (w.flags & wire::kAsync) != 0;
  op.event = w.event;
  op.event2 = op.kind == OpKind::kCommInit ? 0 : w.event2;  // a join's is its members
  op.non_blocking = (w.flags & wire::kNonBlocking) != 0;
  op.priority = w.priority;
  op.coll = static_cast<netmodel::CollectiveOp>(w.coll);
  op.count = w.count;
  op.dtype = static_cast<DataType>(w.dtype);
  op.redop = static_cast<ReduceOp>(w.redop);
  op.root = w.root;
  op.peer = w.peer;
  op.wants_reply = (w.flags & wire::kWantsReply) != 0;
  op.repeated_poll = (w.flags & wire::kRepeatedPoll) != 0;
  op.not_before = w.host_ps >= 0 ? w.host_ps : thread_time;
  // PyTorch's own kernels: their work from the launch (docs/kernel-timing.md), kept in the
  // op so that a recorded trace replays with the same models.
  if (op.kind == OpKind::kKernel && op.gemm.m == 0 && op.bytes == 0 && op.name != 0) {
    const timing::KernelClass& kernel = kernel_classes_.Get(op.name, names_);
    const std::size_t count = std::min<std::size_t>(w.int_arg_count, std::size(w.int_args));
    const std::span<const std::int64_t> int_args(w.int_args, count);
    if (kernel.family != timing::KernelFamily::kNone) {
      timing::DescribeKernelWork(kernel, int_args, &op);
      kernel_code_.Wrote(connection->pid(), w);  // its code is not read: it may write them
    } else if (op.attention.batch == 0 &&
               !kernel_code_.Count(connection->pid(), names_.Name(op.name), kernel, w, &op)) {
      kernel_code_.Wrote(connection->pid(), w);
      // A kernel no model knows and whose code Myriad has not: its work guessed from the
      // launch's shape and what its pointers reach, and said to be a guess.
      const std::size_t pointers =
          std::min<std::size_t>(w.pointer_arg_count, std::size(w.pointer_bytes));
      timing::GuessKernelWork(kernel.array_element_bytes,
                              std::span<const std::uint64_t>(w.pointer_bytes, pointers), &op);
    }
  }
  return Status::Ok();
}

void LiveSource::Answer(std::uint32_t thread, std::shared_ptr<Connection> connection,
                        const OpReply& reply) {
  int owner = -1;
  {
    // The thread resumes at the answer's time.
    std::lock_guard<std::mutex> lock(state_.mu);
    owner = owner_;
    ProcessState::Thread& t = state_.processes[static_cast<size_t>(owner)].threads[thread];
    t.engine_blocked = false;
    t.time = std::max(t.time, reply.host_time);
  }
  if (resume_) resume_(owner);
  if (connection) connection->SendReply(reply.host_time, reply.status, reply.value);
}

void LiveSource::Reply(const Op&, const OpReply& reply) {
  std::uint32_t thread = 0;
  std::shared_ptr<Connection> connection;
  {
    std::lock_guard<std::mutex> lock(state_.mu);
    thread = last_thread_;
    connection = last_from_;
  }
  Answer(thread, std::move(connection), reply);
}

void LiveSource::ReplyLater(std::uint64_t handle, const OpReply& reply) {
  std::pair<std::uint32_t, std::shared_ptr<Connection>> to;
  {
    std::lock_guard<std::mutex> lock(state_.mu);
    auto it = deferred_.find(handle);
    if (it == deferred_.end()) return;
    to = std::move(it->second);
    deferred_.erase(it);
  }
  Answer(to.first, std::move(to.second), reply);
}

}  // namespace

LiveWorkload::~LiveWorkload() = default;

Result<std::unique_ptr<LiveWorkload>> LiveWorkload::Start(const LiveOptions& options) {
  if (options.placement.empty())
    return Status::InvalidArgument("a launch needs at least one process");
  for (const ProcessPlacement& p : options.placement)
    if (p.first_gpu < 0 || p.visible < 1)
      return Status::InvalidArgument("a launch needs at least one device per process");
  auto server = std::make_unique<Server>(options);
  if (Status st = server->Listen(); !st.ok()) return st;
  return std::unique_ptr<LiveWorkload>(std::move(server));
}

}  // namespace myriad::emulator
