// A Workload built in code, op by op, for engine tests whose virtual times are worked out by
// hand next to the ops that produce them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "myriad/emulator/op_source.h"

namespace myriad::testing {

using emulator::DataType;
using emulator::NameId;
using emulator::Op;
using emulator::OpKind;

class VectorWorkload : public emulator::Workload {
 public:
  explicit VectorWorkload(int world)
      : ops_(static_cast<size_t>(world)), mirror_of_(static_cast<size_t>(world), -1) {}

  int world_size() const override { return static_cast<int>(ops_.size()); }
  const std::vector<emulator::CommunicatorSpec>& communicators() const override { return comms_; }
  emulator::NameTable& names() override { return names_; }
  std::string description() const override { return "test workload"; }
  Result<std::unique_ptr<emulator::OpSource>> OpenRank(int rank) override {
    return std::unique_ptr<emulator::OpSource>(std::make_unique<Source>(
        ops_[static_cast<size_t>(rank)], mirror_of_[static_cast<size_t>(rank)]));
  }
  // Rank folding: `rank` says it replays `source`'s ops (its ops are still the ones given).
  VectorWorkload& Mirror(int rank, int source) {
    mirror_of_[static_cast<size_t>(rank)] = source;
    return *this;
  }

  NameId Comm(const std::string& name, std::vector<int> ranks) {
    comms_.push_back({names_.Intern(name), std::move(ranks), {}});
    return comms_.back().name;
  }

  // Builders; each returns *this so a rank's program reads top to bottom.
  VectorWorkload& Add(int rank, Op op) {
    ops_[static_cast<size_t>(rank)].push_back(op);
    return *this;
  }
  VectorWorkload& StreamCreate(int rank, int stream, bool non_blocking = false) {
    Op op;
    op.kind = OpKind::kStreamCreate;
    op.stream = stream;
    op.non_blocking = non_blocking;
    return Add(rank, op);
  }
  VectorWorkload& Kernel(int rank, int stream, const std::string& name, double us) {
    Op op;
    op.kind = OpKind::kKernel;
    op.stream = stream;
    op.name = names_.Intern(name);
    op.duration = emulator::FromMicros(us);
    return Add(rank, op);
  }
  // A kernel on tensor cores (a GEMM of that shape) with a given duration.
  VectorWorkload& Gemm(int rank, int stream, const std::string& name, double us, std::int64_t m,
                       std::int64_t n, std::int64_t k) {
    Kernel(rank, stream, name, us);
    ops_[static_cast<size_t>(rank)].back().gemm = {m, n, k};
    return *this;
  }
  VectorWorkload& Host(int rank, double us) {
    Op op;
    op.kind = OpKind::kHost;
    op.duration = emulator::FromMicros(us);
    return Add(rank, op);
  }
  VectorWorkload& Simple(int rank, OpKind kind, int stream = 0, int event = 0) {
    Op op;
    op.kind = kind;
    op.stream = stream;
    op.event = event;
    return Add(rank, op);
  }
  VectorWorkload& Collective(int rank, int stream, const std::string& comm,
                             netmodel::CollectiveOp coll, std::uint64_t count,
                             DataType dtype = DataType::kFloat32, int root = -1) {
    Op op;
    op.kind = OpKind::kCollective;
    op.stream = stream;
    op.comm = names_.Intern(comm);
    op.coll = coll;
    op.count = count;
    op.dtype = dtype;
    op.root = root;
    return Add(rank, op);
  }
  VectorWorkload& P2p(int rank, OpKind kind, int stream, const std::string& comm, int peer,
                      std::uint64_t count) {
    Op op;
    op.kind = kind;
    op.stream = stream;
    op.comm = names_.Intern(comm);
    op.peer = peer;
    op.count = count;
    op.dtype = DataType::kFloat32;
    return Add(rank, op);
  }
  VectorWorkload& Memory(int rank, OpKind kind, std::uint64_t bytes) {
    Op op;
    op.kind = kind;
    op.bytes = bytes;
    return Add(rank, op);
  }
  VectorWorkload& Marker(int rank, const std::string& label = "iteration") {
    Op op;
    op.kind = OpKind::kMarker;
    op.label = names_.Intern(label);
    return Add(rank, op);
  }

 private:
  class Source : public emulator::OpSource {
   public:
    Source(const std::vector<Op>& ops, int mirror_of) : ops_(ops), mirror_of_(mirror_of) {}
    Result<bool> Next(Op& op) override {
      if (next_ >= ops_.size()) return false;
      op = ops_[next_++];
      return true;
    }
    int mirror_of() const override { return mirror_of_; }

   private:
    const std::vector<Op>& ops_;
    const int mirror_of_;
    size_t next_ = 0;
  };

  std::vector<std::vector<Op>> ops_;
  std::vector<int> mirror_of_;
  std::vector<emulator::CommunicatorSpec> comms_;
  emulator::NameTable names_;
};

}  // namespace myriad::testing
