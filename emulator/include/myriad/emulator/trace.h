// Trace files: per-rank op streams recorded once and replayed on any cluster.
//
// Two encodings of the same content (docs/trace-format.md):
//   - JSON Lines (".jsonl"): human-writable, one op per line, ranks may interleave;
//   - binary (".mtrace", recognised by its magic bytes): compact, and read lazily, one rank's
//     block at a time, so replaying a large trace costs memory per rank, not per op.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "myriad/emulator/op.h"
#include "myriad/emulator/op_source.h"
#include "myriad/status.h"

namespace myriad::emulator {

// Version of the JSON Lines format ("myriad_trace" in the header line) and of the binary format
// (the uint32 after the magic). Writers write the current one; a reader accepts exactly the
// versions it knows, from the oldest on (docs/trace-format.md, "Versioning"). Version 2 adds a
// fused attention's implementation and a kernel's guessed bytes.
inline constexpr int kJsonlTraceVersion = 2;
inline constexpr int kOldestJsonlTraceVersion = 1;
inline constexpr std::uint32_t kBinaryTraceVersion = 2;
inline constexpr std::uint32_t kOldestBinaryTraceVersion = 1;

// Opens a trace file, JSON Lines or binary (detected by the magic bytes "MYRTRACE"), as a
// Workload. JSON Lines traces are parsed and checked whole here; binary traces are checked
// (header, tables, index) here and each rank's ops are decoded as OpSource::Next asks for them.
// Errors are one line and name the file (and the line, or the rank and op index).
Result<std::unique_ptr<Workload>> OpenTrace(const std::string& path);

// Writes any Workload (all ranks' ops, communicators, names) as a binary trace. Ranks are read
// one after the other through OpenRank, so memory does not grow with the number of ops. The
// file appears under `path` only once complete.
Status WriteBinaryTrace(Workload& workload, const std::string& path);

// Writes any Workload as JSON Lines: the header, the communicators, then each rank's ops in
// rank order, fields in a canonical order and defaults left out. Reading the result and
// writing it again gives the same bytes.
Status WriteJsonlTrace(Workload& workload, const std::string& path);

// A workload held in memory: what a JSON Lines trace becomes, and a convenient way for tests
// and generators to build one. OpenRank's sources refer to this object's ops, so it must
// outlive them.
class InMemoryWorkload : public Workload {
 public:
  InMemoryWorkload(int world_size, std::string description);

  int world_size() const override { return static_cast<int>(ops_.size()); }
  const std::vector<CommunicatorSpec>& communicators() const override { return comms_; }
  NameTable& names() override { return names_; }
  std::string description() const override { return description_; }
  Result<std::unique_ptr<OpSource>> OpenRank(int rank) override;
  std::uint64_t expected_ops() const override {
    std::uint64_t n = 0;
    for (const std::vector<Op>& rank : ops_) n += rank.size();
    return n;
  }

  void AddCommunicator(CommunicatorSpec comm) { comms_.push_back(std::move(comm)); }
  // Appends `op` to the program of `rank` (0 <= rank < world_size()).
  void AddOp(int rank, const Op& op) { ops_[static_cast<std::size_t>(rank)].push_back(op); }
  const std::vector<Op>& ops(int rank) const { return ops_[static_cast<std::size_t>(rank)]; }

 private:
  std::string description_;
  NameTable names_;
  std::vector<CommunicatorSpec> comms_;
  std::vector<std::vector<Op>> ops_;
};

// Wraps a workload so that the ops its sources hand the engine are kept (`myriad run
// --record`). Communicators created at run time become declarations; live-only calls become
// their trace equivalents (elapsed time: two event syncs) or are dropped (stream queries).
class RecordingWorkload : public Workload {
 public:
  explicit RecordingWorkload(Workload& inner);

  int world_size() const override { return inner_.world_size(); }
  const std::vector<CommunicatorSpec>& communicators() const override {
    return inner_.communicators();
  }
  NameTable& names() override { return inner_.names(); }
  std::string description() const override { return inner_.description(); }
  Result<std::unique_ptr<OpSource>> OpenRank(int rank) override;
  SimTime NextTimer() override { return inner_.NextTimer(); }
  SimTime NextSleep() override { return inner_.NextSleep(); }
  bool AnyOutsideWait() override { return inner_.AnyOutsideWait(); }
  void FireTimers(SimTime now) override { inner_.FireTimers(now); }

  // After the run: writes what was recorded, JSON Lines for ".jsonl", else binary.
  Status Write(const std::string& path);

  // Called by the recording sources (the engine thread).
  void Record(int rank, const Op& op);
  void Replied(int rank, const Op& op, const OpReply& reply);

 private:
  Workload& inner_;
  std::vector<std::vector<Op>> ops_;
  std::map<NameId, std::vector<int>> comms_;  // communicator -> global rank by comm rank
};

}  // namespace myriad::emulator
