// The engine's user API: run a Workload on a Cluster in virtual time and get what happened.
// The kernel of the engine (fibers, scheduler, event queue, devices, communicators) lives in
// emulator/engine/ and is not part of this API.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "myriad/emulator/kernel_timing.h"
#include "myriad/emulator/op.h"
#include "myriad/emulator/op_source.h"
#include "myriad/netmodel/cluster.h"
#include "myriad/netmodel/collective.h"
#include "myriad/netmodel/flow_model.h"
#include "myriad/status.h"

namespace myriad::emulator {

// How far a run has got, for a progress display: handed to EngineOptions::on_progress.
struct Progress {
  SimTime virtual_time = 0;        // the engine's clock
  std::uint64_t ops = 0;           // ops the ranks have simulated so far
  std::uint64_t expected_ops = 0;  // all the run will simulate, when the workload knows (else 0)
  int ranks = 0;
  int finished = 0;  // ranks done
  double wall_seconds = 0;
  bool done = false;  // the last call, after the run
};

enum class OverlapModel { kShared, kFlat, kOff };
std::string_view ToString(OverlapModel model);  // "shared", "flat", "off"

// What communication beside compute cost the kernels: `added` over all ranks, against their
// time alone, under `model`.
struct OverlapStats {
  OverlapModel model = OverlapModel::kShared;
  double flat_slowdown = 0;  // kFlat's factor
  SimTime added = 0;
  std::uint64_t slowed_kernels = 0;  // kernels that ran beside communication and took longer
};

struct EngineOptions {
  // Earliest a device op starts after the host enqueues it (launch latency). Assumed typical
  // figure for a CUDA kernel launch; docs/engine.md.
  SimTime launch_latency = 2 * kPicosPerMicro;
  // Host time each CUDA/NCCL API call costs (enqueue, query). Traces that record host work
  // as `host` ops leave it at 0.
  SimTime api_call_cost = 0;
  // How a kernel slows while communication of its rank is in flight on another stream
  // (docs/engine.md "Compute beside communication"). kShared: NCCL's channels take their SMs
  // from tensor-core kernels, and the collective's HBM traffic takes its share of the memory
  // bandwidth from memory-bound ones. kFlat: every kernel runs (1 + overlap_slowdown) times
  // longer while a collective is in flight. kOff: communication takes nothing from compute.
  OverlapModel overlap = OverlapModel::kShared;
  double overlap_slowdown = 0.10;  // kFlat's factor
  // Ops a stream holds not yet completed before the next launch on it blocks the host. CUDA
  // blocks kernel launches once about 1,024 are pending (an observed figure, not documented;
  // docs/engine.md). 0: unbounded.
  std::uint64_t max_queued_ops = 1024;
  KernelTimingOptions timing;
  // Timeline: record slices for at most this many ranks (evenly sampled, rank 0 and the last
  // rank included); 0 records none.
  int timeline_max_ranks = 0;
  // Markers with this label delimit iterations (trace `marker` ops, NVTX marks and ranges).
  std::string iteration_label = "iteration";
  // Engine log level on stderr: trace, debug, info, warn (default), error, off. Lines carry
  // virtual time.
  std::string log_level = "warn";
  // Stack size of each rank's fiber.
  std::size_t fiber_stack_bytes = 64 * 1024;
  // How collectives and sends are timed: alone by the analytical model, or as flows that
  // share the cluster's links with everything else in flight (docs/network.md).
  netmodel::Fidelity fidelity = netmodel::Fidelity::kAnalytical;
  netmodel::FlowOptions flow;  // routing, link changes, background traffic (flow fidelity)
  // Called from the engine's thread about every progress_interval of real time while the run
  // lasts, and once when it ends (done); absent: never. Reads only: the run's outcome does not
  // depend on it.
  std::function<void(const Progress&)> on_progress;
  std::chrono::milliseconds progress_interval{250};
  // Live runs: whether some process of the run is doing work on its CPU now (a compile
  // worker, say), which may end a wait the engine cannot see; a timed wait's deadline is not
  // reached while it is (docs/engine.md). Called from the engine's thread; absent: never busy.
  std::function<bool()> host_busy;
};

// One slice of the timeline: an op on a stream, host work or a wait on the host track.
struct TimelineSlice {
  int rank = 0;
  std::int32_t track = 0;  // stream id; kHostTrack for the host thread
  std::string name;
  std::string category;  // "kernel", "memcpy", "collective", "host", "wait", ...
  SimTime start = 0;
  SimTime duration = 0;
  std::string detail;  // what the op was (size, algorithm, ...), shown as the slice's args
};
inline constexpr std::int32_t kHostTrack = -1;

struct TimelineMarker {
  int rank = 0;
  std::string label;
  SimTime time = 0;
};

struct RankResult {
  int rank = 0;
  SimTime end_time = 0;      // host time when the rank's ops (and device work) were done
  SimTime compute = 0;       // device busy with kernels, copies, memsets
  SimTime exposed_comm = 0;  // device busy with communication only
  SimTime idle = 0;          // neither
  std::uint64_t peak_memory = 0;
  std::uint64_t ops = 0;
  int mirror_of = -1;  // rank folding: the live rank it replayed (-1: it ran itself)
  // Exposed communication by communicator name, in order of first exposure: each
  // communicator with an op in flight during an exposed interval counts all of it (so they
  // can add up to more than exposed_comm when two overlap).
  std::vector<std::pair<std::string, SimTime>> exposed_by_comm;
};

struct CollectiveStats {
  std::string comm;
  netmodel::CollectiveOp op = netmodel::CollectiveOp::kAllReduce;
  std::uint64_t bytes = 0;
  netmodel::Algorithm algorithm = netmodel::Algorithm::kRing;
  netmodel::Protocol protocol = netmodel::Protocol::kSimple;
  std::uint64_t calls = 0;  // communicator-wide calls (not per rank)
  SimTime duration = 0;     // of one call, alone (the analytical model)
  // Flow fidelity: the mean and longest time a call took with the traffic around it.
  SimTime flow_mean = 0;
  SimTime flow_max = 0;
};

// Flow fidelity: how busy a link of the cluster's graph was over the run.
struct LinkUsage {
  std::string name;        // "nic17.tx", "leaf5.up0" (docs/network.md)
  double bytes = 0;        // carried, every job's traffic included
  double utilisation = 0;  // bytes / (capacity x total time)
};

struct RunResult {
  int world_size = 0;
  SimTime total_time = 0;               // the last rank's end time
  std::vector<SimTime> iteration_ends;  // per "iteration" marker: the latest rank's time
  std::vector<RankResult> ranks;
  std::vector<ProviderStats> kernel_timing;
  std::vector<UncoveredKernel> uncovered_kernels;
  std::vector<GuessedKernel> guessed_kernels;  // timed by the launch guess, largest first
  // Counted from their code with loops over data no copy gave Myriad, largest first.
  std::vector<GuessedKernel> assumed_kernels;
  std::vector<FamilyStats> kernel_families;  // kernel time by family and model, largest first
  ClockStats clocks;  // the tensor-core clock under the power limit, and what it added
  Fp8AccumulationStats fp8_accumulation;  // FP8 GEMMs' FP32 promotion, and what it added
  OverlapStats overlap;  // what communication in flight beside kernels added to them
  std::vector<ImplausibleKernel> implausible_kernels;  // durations past a physical bound
  std::vector<CollectiveStats> collectives;            // by communicator, op, size
  std::uint64_t simulated_ops = 0;
  // Flow fidelity: the busiest links (at most 16, busiest first, ties by name) and how many
  // links carried anything.
  std::vector<LinkUsage> busiest_links;
  int links_used = 0;
  // Live runs: device work a thread enqueued at a clock virtual time had already passed (it
  // resumed behind it: after a wait outside Myriad's view, say). Such work starts when the
  // engine gets to it, which follows real time; the report says so.
  std::uint64_t late_ops = 0;
  SimTime most_late = 0;  // by how much the latest of them was behind
  std::vector<TimelineSlice> timeline;
  std::vector<TimelineMarker> markers;
  std::vector<int> timeline_ranks;  // the ranks the timeline covers

  // Mean time between consecutive iteration markers, or the total time with fewer than two.
  SimTime iteration_time() const;
};

// Runs every rank of `workload` to completion. Fails with one clear message on a mismatched
// collective, a deadlock (the message lists who waits for what), a predicted out-of-memory,
// or malformed ops. On such a failure, `partial` (when given) receives what ran until then.
Result<RunResult> RunEngine(Workload& workload, const netmodel::Cluster& cluster,
                            const EngineOptions& options, RunResult* partial = nullptr);

}  // namespace myriad::emulator
