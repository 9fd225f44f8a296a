// Live op sources: processes running under `myriad run` send their CUDA/NCCL calls over a
// Unix socket (interpose/protocol/wire.h); each virtual device of each process is one
// logical rank fed by what its process sends.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "myriad/emulator/op_source.h"
#include "myriad/status.h"

namespace myriad::emulator {

// Which of the cluster's GPUs a process sees: devices 0..visible-1 of the process are GPUs
// first_gpu..first_gpu+visible-1 (its node's, as torchrun, mpirun and Slurm give them).
struct ProcessPlacement {
  int first_gpu = 0;
  int visible = 1;
};

// Rank folding (docs/run.md, "Folding"): of a world of `world` ranks laid out as a mesh, only
// the ranks at index 0 of the folded axes run as processes; every other rank is a mirror that
// replays its source rank's op stream on its own GPU. A rank's coordinates on the folded axes
// give its replica (0: live); those on the live axes give its source, the live rank with the
// same coordinates there. When the folded axes are the mesh's slowest the live ranks are
// 0..live-1; a live axis slower than a folded one (a pipeline stage, slowest in torchtitan's
// mesh) spreads them out: in tp=8,dp=8,pp=8 folding tp,dp they are 0, 64, ..., 448.
struct FoldPlan {
  struct Axis {
    std::string name;
    int size = 1;
    int stride = 1;       // in the replica's (or live) index: coordinate = index / stride % size
    int rank_stride = 1;  // in the world's ranks: coordinate = rank / rank_stride % size
  };
  int world = 1;
  int live = 1;                   // ranks per replica: the ones that run
  int replicas = 1;               // world / live
  std::string mesh;               // as given, for reports: "dp=16", "tp=8,pp=4,dp=4"
  std::vector<Axis> folded_axes;  // fastest first
  std::vector<Axis> live_axes;    // fastest first; stride in the live index
  bool folded() const { return replicas > 1; }
  // The live ranks are 0..live-1 (no live axis is slower than a folded one).
  bool contiguous() const;
  bool is_live(int rank) const { return replica_of(rank) == 0; }
  int replica_of(int rank) const;
  // The live rank a rank mirrors (itself when live), and the rank of `source`'s mirror in
  // replica `replica`.
  int source_of(int rank) const;
  int rank_of(int source, int replica) const;
  // The live ranks in order: live_rank(0..live-1).
  int live_rank(int index) const;
  // "dp", "tp,dp": the folded axes as --fold names them.
  std::string folded_names() const;
  // "0-7", "0,64,128,...,448": the live ranks as a report names them.
  std::string live_ranks_text() const;
};
// The plan for `mesh` ("tp=8,pp=4,dp=4": axes from the fastest-varying to the slowest; empty:
// every rank a data-parallel replica) over `world` ranks, folding the axes in `fold` (dp, tp,
// cp). Fails naming what is wrong: an unknown or repeated axis, sizes whose product is not the
// world, a fold axis not in the mesh, or one that cannot be folded.
Result<FoldPlan> PlanFold(const std::string& mesh, const std::vector<std::string>& fold, int world);

// How a mirror (replica `replica`) joins a communicator its source joined as rank `rank` of
// `nranks`. The communicator spans some of the folded axes: its live members times the
// replicas that differ only on those axes. A mirror whose other folded coordinates are its
// source's joins the same communicator (the world: its rank moves by `replica` x live; a
// data-parallel group: its rank is its replica); any other mirror joins its group's copy,
// named `name`/replica<copy>, where `copy` is the first replica of its group (a group inside
// one replica: each replica has a copy of its own). `members`, when PyTorch's hook gave them
// (the communicator's global ranks in order), say which axes it spans; without them they are
// inferred from `nranks`, and a size that fits two layouts is an error naming the
// communicator, as is one that fits none.
struct MirrorMembership {
  bool own_copy = false;        // a copy: named `name`/replica<copy>
  int copy = 0;                 // the first replica of the mirror's group (0: the source's group)
  int rank = 0;                 // the mirror's communicator rank
  bool inside_replica = false;  // its members are all live (a copy for every replica)
};
Result<MirrorMembership> InferMirrorMembership(const FoldPlan& plan, const std::string& comm,
                                               int nranks, int rank, int replica,
                                               const std::vector<int>* members = nullptr);

struct LiveOptions {
  // One entry per process. A logical rank is a GPU that a process uses (sends work for);
  // a GPU belongs to the first process that uses it, and no other process may.
  std::vector<ProcessPlacement> placement = {ProcessPlacement{}};
  std::string description = "live processes";
  // With folding, `placement` holds the live processes only and the other ranks mirror them.
  FoldPlan fold;
};

// Serves the socket and presents the connected processes as a Workload.
class LiveWorkload : public Workload {
 public:
  // Creates a private directory (mode 0700) with the socket and starts serving it.
  static Result<std::unique_ptr<LiveWorkload>> Start(const LiveOptions& options);
  ~LiveWorkload() override;

  // Path of the socket processes connect to (the launcher puts it in MYRIAD_SOCKET).
  virtual const std::string& socket_path() const = 0;
  // Marks process `p` as gone (the launcher saw it exit): its ranks' streams end once
  // everything it sent has been read.
  virtual void ProcessExited(int process) = 0;
  // The run failed: every connected process is told why (its shim prints it and exits).
  virtual void Abort(const std::string& why) = 0;
  // Ends every rank now with `why` as the engine's error (a timeout, a signal): the engine
  // stops waiting for processes that may never send anything again.
  virtual void Shutdown(const std::string& why) = 0;
  // Whether `process` was told the run had ended (after Stop()): its exit is a consequence.
  virtual bool WasTold(int process) const = 0;
  // Bytes the processes copied from device memory to the host (no kernel wrote any of them).
  virtual std::uint64_t bytes_read_back() const = 0;
  // The errors the processes' CUDA calls returned, by name (each process tells at its exit).
  virtual std::map<std::string, std::uint64_t> cuda_errors() const = 0;
  // Stops serving; pending and future replies are dropped.
  virtual void Stop() = 0;
};

}  // namespace myriad::emulator
