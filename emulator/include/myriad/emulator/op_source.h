// The seam between the engine and whatever feeds it ops: a Workload describes the job
// (ranks, communicators) and opens one OpSource per logical rank. The trace reader is one
// implementation; live processes, mirrors and synthetic workloads are others.
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "myriad/emulator/op.h"
#include "myriad/status.h"

namespace myriad::emulator {

// A named set of ranks. Member i of `ranks` is communicator rank i.
struct CommunicatorSpec {
  NameId name = 0;
  std::vector<int> ranks;  // global (logical) ranks
  // The cluster GPUs its collectives are timed on, when more than its simulated members: a
  // workload that simulates one of several identical replicas (rank folding) times the
  // replicas' collective on all of them. Empty: the members' own GPUs.
  std::vector<int> gpus;
};

class OpSource {
 public:
  virtual ~OpSource() = default;
  // Fills `op` with the rank's next op. Returns false at the end of its stream, or an error
  // (malformed input) naming where it was found.
  virtual Result<bool> Next(Op& op) = 0;

  // Live sources (a running process): true while the next op has not arrived. The engine then
  // holds virtual time at the rank's clock and waits; the source calls the wakeup the engine
  // gave it when ops arrive. Recorded sources are never pending.
  virtual bool Pending() { return false; }
  // False for a rank nothing ever used (a GPU a live process could have picked but did not):
  // it is left out of the results.
  virtual bool Used() const { return true; }
  // While pending: the earliest virtual time the process could send this rank an op (its
  // driving host thread's clock), or the largest SimTime when that thread is blocked waiting
  // for the engine and so cannot hold time back. `host` is the rank's clock.
  virtual SimTime HoldTime(SimTime host) { return host; }
  // While pending and holding nothing: whether ops may still come however long the engine
  // has nothing else to do (a thread of the process waits on something the engine does not
  // see). The engine then waits for them instead of reporting a deadlock.
  virtual bool MayResume() { return false; }
  virtual void SetWakeup(std::function<void()> wakeup) { (void)wakeup; }
  // Rank folding: the live rank whose op stream this one replays, or -1 (it runs itself).
  virtual int mirror_of() const { return -1; }
  // Rank folding: the data-parallel replica the rank belongs to (0: the live one).
  virtual int replica() const { return 0; }
  // Called after an op with `wants_reply`, with what the process must be told.
  virtual void Reply(const Op& op, const OpReply& reply) {
    (void)op;
    (void)reply;
  }
  // The op Next() returned last (a live thread's poll) is answered later, while the rank
  // goes on with other threads' ops: a handle for ReplyLater (0: not supported).
  virtual std::uint64_t DeferReply() { return 0; }
  virtual void ReplyLater(std::uint64_t handle, const OpReply& reply) {
    (void)handle;
    (void)reply;
  }
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual int world_size() const = 0;
  // The cluster GPU a rank runs on (rank folding places a replica's ranks on their GPUs).
  virtual int gpu_of(int rank) const { return rank; }
  virtual const std::vector<CommunicatorSpec>& communicators() const = 0;
  virtual NameTable& names() = 0;
  // Where the ops come from, for reports ("trace run.jsonl").
  virtual std::string description() const = 0;
  // The ops of one logical rank, generated or read lazily.
  virtual Result<std::unique_ptr<OpSource>> OpenRank(int rank) = 0;
  // How many ops all ranks hold, when known before the run (a trace in memory, a synthetic
  // workload); 0 when not (a live program). Progress displays estimate the time left from it;
  // the engine asks once, and only when progress is shown (it may cost a pass of generation).
  virtual std::uint64_t expected_ops() const { return 0; }
  // Host timers (live processes' sleeps): the earliest one's virtual time, or the largest
  // SimTime when there is none; the engine fires them in time order with its events, and
  // FireTimers(now) answers every one due by `now`.
  virtual SimTime NextTimer() { return std::numeric_limits<SimTime>::max(); }
  // The earliest sleep's (a timer no other thread can end early, unlike a timed wait's).
  virtual SimTime NextSleep() { return std::numeric_limits<SimTime>::max(); }
  // Whether a thread waits on something outside Myriad's view (a socket, a pipe), which may
  // wake it and let it end a timed wait at any moment.
  virtual bool AnyOutsideWait() { return false; }
  virtual void FireTimers(SimTime now) { (void)now; }
};

}  // namespace myriad::emulator
