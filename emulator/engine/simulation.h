// The engine's kernel: logical ranks (a host thread as a fiber, a virtual device of streams),
// communicators, and the event loop that keeps virtual time. RunEngine (engine.cc) is the only
// entry point; this header is private to emulator/engine/.
#pragma once

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "engine/event_queue.h"
#include "engine/ring_queue.h"
#include "engine/scheduler.h"
#include "myriad/emulator/engine.h"
#include "myriad/emulator/kernel_timing.h"
#include "myriad/netmodel/collective.h"
#include "myriad/netmodel/flow_model.h"
#include "myriad/netmodel/overlap.h"

namespace myriad::emulator::engine {

// Whether a marker's label delimits iterations under --iteration-marker `pattern`: labels
// that begin with it, or, when it holds a '*', labels it matches as a glob.
bool IsIterationMarker(std::string_view pattern, std::string_view label);

// cudaErrorInvalidResourceHandle: an event that was never recorded.
inline constexpr int kErrorInvalidResourceHandle = 400;

// "Op `index` of stream `slot` has completed" (indices start at 1).
struct Dep {
  int slot = 0;
  std::uint64_t index = 0;
};

// What communication in flight takes from its GPU's compute: NCCL's channels (one SM each)
// and the HBM traffic its bytes cause (docs/engine.md "Compute beside communication").
// What a communication op takes from its GPU while it runs (netmodel/overlap.h).
using CommLoad = netmodel::CommFootprint;

struct DeviceOp {
  Op op;
  SimTime enqueued = 0;     // host time of the API call
  SimTime ready_floor = 0;  // enqueued + launch latency
  std::uint64_t index = 0;  // position in its stream
  std::vector<Dep> deps;    // event waits and legacy-stream ordering
  std::vector<Op> group;    // an NCCL group: its communication ops
  int unresolved = 0;       // group members (or 1 for a single comm op) not yet matched
  SimTime comm_end = 0;     // latest end among matched members
  SimTime start = -1;       // when it started (or arrived, for communication)
  SimTime comm_start = -1;  // when its communication began (all peers arrived)
  // A running kernel: undisturbed work left, as of `progress_at`, and whether it is slowed.
  SimTime remaining = 0;
  SimTime progress_at = 0;
  double stretch = 1.0;       // a kernel's duration factor under the communication beside it
  SimTime undisturbed = 0;    // a kernel's duration alone
  bool tensor_bound = false;  // a kernel on tensor cores (slowed by SMs taken, not bandwidth)
  CommLoad load;              // communication: what it takes from the GPU while in flight
  std::string detail;         // timeline args for communication ops
};

// Something waiting for a stream to reach an op index: the rank's host, or another stream.
struct Waiter {
  std::uint64_t index = 0;
  int target_slot = -1;    // -1: the host thread of the stream's rank; kPollWaiter: a poll
  std::uint64_t poll = 0;  // kPollWaiter: the poll's id
};
inline constexpr int kPollWaiter = -2;

// A live thread's event or stream query, answered from the event loop at its time (or at the
// stream's next completion, for a polling loop's) while its rank goes on with other threads'
// ops: how often a thread polls, which follows real time, then changes nothing else.
struct PendingPoll {
  int rank = 0;
  int slot = 0;
  std::uint64_t index = 0;   // ready once the stream has completed this many ops
  bool advance = false;      // "not ready" waits for the next completion
  std::uint64_t handle = 0;  // OpSource::DeferReply's
};

struct Stream {
  std::int32_t id = 0;
  bool blocking = true;  // synchronises with the legacy default stream
  RingQueue<DeviceOp> queue;
  std::uint64_t enqueued = 0;
  std::uint64_t completed = 0;
  SimTime last_completion = 0;  // when its latest completed op completed
  bool head_started = false;
  bool start_scheduled = false;
  std::uint64_t generation = 0;  // bumped when the head's completion is rescheduled
  std::vector<Waiter> waiters;
};

struct Rank {
  int id = 0;
  SimTime host = 0;
  std::unique_ptr<OpSource> source;
  FiberKey* key = nullptr;
  // Blocking: the host thread waits until `pending_waits` reaches zero.
  boost::fibers::mutex mu;
  boost::fibers::condition_variable cv;
  bool wake = false;
  int pending_waits = 0;
  std::string waiting_for;  // for the deadlock report
  bool finished = false;
  // Device
  std::vector<Stream> streams;  // slot 0: legacy default stream, slot 1: per-thread default
  std::unordered_map<std::int32_t, int> slots;
  std::unordered_map<std::int32_t, Dep> events;  // event -> its latest record
  std::uint64_t memory = 0;
  std::uint64_t peak_memory = 0;
  // Accounting
  int active_compute = 0;
  int active_comm = 0;
  int active_collectives = 0;  // of active_comm: collectives (the rest send/recv)
  CommLoad comm_load;          // the sum of the loads of its communication in flight
  // Communicators with communication in flight (name, ops), and the exposed time each was
  // part of; a few per rank, so vectors.
  std::vector<std::pair<NameId, int>> comms_in_flight;
  std::vector<std::pair<NameId, SimTime>> exposed_by_comm;
  SimTime accounted_until = 0;
  SimTime compute = 0;
  SimTime exposed_comm = 0;
  std::uint64_t ops = 0;
  // NCCL group being built
  int group_depth = 0;
  std::vector<Op> group_ops;
  std::int32_t group_stream = 0;
  // Per communicator: the next collective sequence number; p2p sequence per (comm, peer).
  std::unordered_map<std::uint32_t, std::uint64_t> coll_seq;
  std::unordered_map<std::uint64_t, std::uint64_t> send_seq;
  std::unordered_map<std::uint64_t, std::uint64_t> recv_seq;
  std::vector<SimTime> iteration_markers;
  // Live sources
  bool awaiting_process = false;  // waits for its process's next op
  SimTime hold = 0;  // while awaiting: how far it holds virtual time back (kNever: not at all)
  OpReply reply;     // what the current op answers
  std::int64_t split_result = 0;  // ncclCommSplit: (child rank << 32) | child size; 0: none
  std::unordered_map<std::int32_t, SimTime> record_times;  // event -> its latest record's time
  bool traced = false;                                     // its slices go to the timeline
};

struct Communicator {
  NameId name = 0;
  std::vector<int> ranks;                  // member i = communicator rank i
  std::unordered_map<int, int> comm_rank;  // global rank -> communicator rank
  std::vector<int> gpus;                   // the GPUs its collectives are timed on, in order
  netmodel::CommLayout layout;
  // What its members' NCCL_ALGO / NCCL_PROTO allow (live processes; all by default).
  netmodel::AlgorithmSet algorithms = netmodel::AlgorithmSet::All();
  netmodel::ProtocolSet protocols = netmodel::ProtocolSet::All();
};

// A collective call being matched across the members of its communicator.
struct CollInstance {
  Op call;  // the first arrival's call
  int first_rank = -1;
  int arrived = 0;
  std::vector<std::pair<int, int>> members;  // (rank, slot) of each arrival
};

// A communicator being created at run time (ncclCommInitRank) as its members join.
struct PendingComm {
  std::vector<int> members;       // communicator rank -> global rank (-1: not joined yet)
  std::vector<int> colors, keys;  // ncclCommSplit: each member's color and key
  // ncclCommSplit under rank folding: the group each member's child is a copy of (its first
  // replica + 1, from the child's members; 0: placed by its color alone).
  std::vector<int> groups;
  int joined = 0;
  SimTime latest = 0;  // the latest member's host time
  // The members' NCCL_ALGO and NCCL_PROTO ("ALGO\nPROTO", each empty when unset): NCCL reads
  // them per process, and the members must agree. `selection_rank`: who set it first.
  std::string selection;
  int selection_rank = -1;
};

struct P2pInstance {
  bool send = false, recv = false;
  int send_rank = -1, send_slot = -1, recv_rank = -1, recv_slot = -1;
  Op send_op, recv_op;
};

class Simulation {
 public:
  Simulation(Workload& workload, const netmodel::Cluster& cluster, const EngineOptions& options,
             std::unique_ptr<KernelTimer> timer);

  Status Prepare();     // communicators, ranks, op sources
  Status Run();         // fibers + event loop, to completion or the first error
  RunResult Collect();  // after Run() succeeded

 private:
  // Host side (runs inside rank fibers): host.cc
  void RankMain(int rank);
  Status Execute(Rank& r, const Op& op);
  Status Enqueue(Rank& r, const Op& op, std::vector<Op> group = {});
  void SyncDevice(Rank& r);
  // What an event or stream query asks about: the stream slot, and the op count it must
  // have completed (0 for an event never recorded).
  Status QueryTarget(Rank& r, const Op& op, int* slot, std::uint64_t* index);
  // A trace's query: "not ready" moves the host's clock to the stream's next completion.
  void Query(Rank& r, int slot, std::uint64_t index, const std::string& what);
  // A live thread's poll: answered now if it can be, else from the event loop (PendingPoll).
  Status StartPoll(Rank& r, const Op& op);
  void AnswerPoll(std::uint64_t id);
  Status JoinCommunicator(Rank& r, const Op& op);
  Status SplitCommunicator(const std::string& name, const PendingComm& pending);
  // The algorithms and protocols a communicator's NCCL_ALGO / NCCL_PROTO selection allows.
  Status ApplySelection(const PendingComm& pending, Communicator& comm) const;
  void WaitForProcess(Rank& r);
  // Called from any thread by a live source when its process sent ops.
  void Notify(int rank);
  void DrainInbox();
  // Whether a waiting live rank's process may still send ops (engine.cc).
  bool MayResume();
  // Whether an unfinished rank waits for its process.
  bool AnyAwaitsProcess() const;
  void Block(Rank& r, std::string what);
  void WaitStream(Rank& r, int slot, std::uint64_t index, const std::string& what);
  Status SlotOf(Rank& r, std::int32_t stream, int* slot);

  // Device side (runs in the event loop, or inline from a host call): device.cc
  void TryStart(int rank, int slot);
  void Begin(int rank, int slot);
  void Complete(int rank, int slot);
  void Satisfy(int rank, int slot);
  void Account(Rank& r);
  void ScheduleKernelEnd(int rank, int slot);
  // Counts a communication op in (delta +1) or out (-1); Restretch applies it.
  void SetCommActive(Rank& r, int delta, bool collective);
  // Adds (sign +1) or removes (-1) a communication op's load; Restretch applies it.
  void ChangeCommLoad(Rank& r, const CommLoad& load, int sign);
  // Moves the ends of `r`'s running kernels to the stretch the communication now in flight
  // gives them.
  void Restretch(Rank& r);
  // What communication in flight on rank `r` stretches kernel `d` by (docs/engine.md).
  double CommStretch(const Rank& r, const DeviceOp& d) const;
  void TrackCommInFlight(Rank& r, const DeviceOp& d, int delta);
  void WakeHost(Rank& r);
  void Fail(Status status);

  // Communication: comm.cc
  Status Arrive(int rank, int slot, const Op& call);
  // The communicator of `call` and the rank's place in it, or why the rank cannot call it.
  Status MemberOf(int rank, const Op& call, const Communicator** comm, int* comm_rank) const;
  Status ArriveCollective(int rank, int slot, const Op& call);
  Status ArriveP2p(int rank, int slot, const Op& source_call);
  Status MirrorPeer(int rank, const Communicator& comm, Op& call) const;
  // Member (rank, slot) of a matched communication ends at `end`; `load`: what it takes from
  // the GPU until its op completes (none when it was added at the start, by BeginComm).
  void Resolve(int rank, int slot, SimTime end, std::string detail, const CommLoad& load = {});
  // The communication of the head op of (rank, slot) is in flight from now on, taking `load`.
  void BeginComm(int rank, int slot, const CommLoad& load = {});
  // Flow fidelity: hands a matched collective or send to the flow model, and handles what
  // the model finished by now.
  struct EstimateKey;
  // `collective`: the collective's statistics key; nullptr for a send/recv.
  Status StartTransfer(Result<std::uint64_t> id, std::vector<std::pair<int, int>> members,
                       const Op& call, const EstimateKey* collective, const CommLoad& load);
  void AdvanceNetwork();
  void ScheduleNetwork();
  Result<netmodel::CollectiveEstimate> TimeCollective(const Communicator& comm, const Op& call);
  std::string Describe(const Op& call) const;
  std::vector<std::string> DeadlockReport();  // one line, then who waits for what
  OverlapStats overlap_;                      // what communication beside kernels added to them
  std::uint64_t late_ops_ = 0;
  SimTime most_late_ = 0;
  // The error for a time at or past kMaxSimTime: on rank r's stream `slot` (the op at its head)
  // or, with `host_op`, on its host at that op.
  std::string ClockBoundError(const Rank& r, int slot, const Op* host_op = nullptr) const;

  SimTime now() const { return now_; }
  // Hands options_.on_progress where the run has got: `done` once at the end, otherwise only
  // when progress_interval has passed since the last call.
  void ReportProgress(bool done);
  void AddSlice(const Rank& r, std::int32_t track, std::string name, std::string category,
                SimTime start, SimTime end, std::string detail = {});

  Workload& workload_;
  NameTable& names_;
  const netmodel::Cluster& cluster_;
  EngineOptions options_;
  std::chrono::steady_clock::time_point progress_start_, progress_last_;
  std::uint64_t progress_expected_ops_ = 0;  // the workload's expected_ops(), when shown
  std::unique_ptr<KernelTimer> timer_;
  netmodel::CollectiveModel model_;
  EventQueue events_;
  SimTime now_ = 0;
  VirtualTimeScheduler* scheduler_ = nullptr;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::unordered_map<NameId, Communicator> comms_;
  std::unordered_map<NameId, PendingComm> pending_comms_;
  std::unordered_map<std::uint64_t, PendingPoll> polls_;
  std::uint64_t last_poll_ = 0;
  // Live ranks waiting for their process, by (host time, rank); and the ranks whose process
  // sent something since the loop last looked (filled by I/O threads).
  std::set<std::pair<SimTime, int>> awaiting_;
  std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::vector<int> inbox_;
  std::unordered_map<std::uint64_t, CollInstance> colls_;
  std::map<std::tuple<NameId, int, int, std::uint64_t>, P2pInstance> p2ps_;
  struct EstimateKey {
    NameId comm;
    int op;
    std::uint64_t bytes;
    bool operator<(const EstimateKey& o) const {
      return std::tie(comm, op, bytes) < std::tie(o.comm, o.op, o.bytes);
    }
  };
  std::map<EstimateKey, netmodel::CollectiveEstimate> estimates_;
  std::map<EstimateKey, std::uint64_t> estimate_calls_;
  // Flow fidelity: the model, the transfers in flight and whom each resolves, and per
  // collective kind the total and longest time calls took.
  std::unique_ptr<netmodel::FlowModel> flow_;
  struct Transfer {
    std::vector<std::pair<int, int>> members;  // (rank, slot)
    EstimateKey key;
    bool collective = false;
    std::string what;  // for the timeline
  };
  std::unordered_map<std::uint64_t, Transfer> transfers_;
  std::uint64_t network_generation_ = 0;
  std::map<EstimateKey, std::pair<SimTime, SimTime>> flow_times_;
  Status error_;
  bool failed_ = false;
  std::vector<TimelineSlice> timeline_;
  std::vector<TimelineMarker> markers_;
  std::uint64_t simulated_ops_ = 0;
};

}  // namespace myriad::emulator::engine
