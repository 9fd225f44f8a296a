// Helpers shared by the trace tests: scratch files, reading a rank's ops, comparing ops field
// by field (names compared as strings, since ids differ between workloads).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "myriad/emulator/op.h"
#include "myriad/emulator/op_source.h"
#include "myriad/emulator/trace.h"

namespace myriad::emulator::testing {

namespace fs = std::filesystem;

inline std::string DataPath(const std::string& name) {
  return std::string(MYRIAD_SOURCE_DIR) + "/tests/emulator/trace/data/" + name;
}

// A directory of its own for each test (ctest runs tests in parallel), removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "-" + info->name();
    for (char& c : name) {
      if (c == '/') c = '_';  // parameterised tests have slashes in their names
    }
    path_ =
        (fs::temp_directory_path() / ("myriad-trace-" + std::to_string(::getpid()) + "-" + name))
            .string();
    fs::remove_all(dir());
    fs::create_directories(dir());
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(dir(), ignored);
  }
  fs::path dir() const { return fs::path(path_); }
  std::string File(const std::string& name) const { return (dir() / name).string(); }

 private:
  std::string path_;
};

inline void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Opens a trace that must open, failing the test (and returning null) if it does not.
inline std::unique_ptr<Workload> MustOpen(const std::string& path) {
  Result<std::unique_ptr<Workload>> trace = OpenTrace(path);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  if (!trace.ok()) return nullptr;
  return std::move(trace).value();
}

inline std::vector<Op> ReadRank(Workload& workload, int rank) {
  std::vector<Op> ops;
  Result<std::unique_ptr<OpSource>> source = workload.OpenRank(rank);
  EXPECT_TRUE(source.ok()) << source.status().message();
  if (!source.ok()) return ops;
  Op op;
  for (;;) {
    Result<bool> more = source.value()->Next(op);
    EXPECT_TRUE(more.ok()) << more.status().message();
    if (!more.ok() || !*more) break;
    ops.push_back(op);
  }
  return ops;
}

// Every field of Op, names by their text.
inline void ExpectSameOp(const Op& a, const NameTable& an, const Op& b, const NameTable& bn,
                         const std::string& where) {
  SCOPED_TRACE(where);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(an.Name(a.name), bn.Name(b.name));
  EXPECT_EQ(a.grid, b.grid);
  EXPECT_EQ(a.block, b.block);
  EXPECT_EQ(a.shared_mem, b.shared_mem);
  EXPECT_EQ(a.duration, b.duration);
  EXPECT_EQ(a.gemm.m, b.gemm.m);
  EXPECT_EQ(a.gemm.n, b.gemm.n);
  EXPECT_EQ(a.gemm.k, b.gemm.k);
  EXPECT_EQ(a.gemm.batch, b.gemm.batch);
  EXPECT_EQ(a.gemm.dtype, b.gemm.dtype);
  EXPECT_EQ(a.gemm.fast_accumulation, b.gemm.fast_accumulation);
  EXPECT_EQ(a.attention.batch, b.attention.batch);
  EXPECT_EQ(a.attention.heads, b.attention.heads);
  EXPECT_EQ(a.attention.seq_q, b.attention.seq_q);
  EXPECT_EQ(a.attention.seq_kv, b.attention.seq_kv);
  EXPECT_EQ(a.attention.head_dim, b.attention.head_dim);
  EXPECT_EQ(a.attention.causal, b.attention.causal);
  EXPECT_EQ(a.attention.backward, b.attention.backward);
  EXPECT_EQ(a.attention.dtype, b.attention.dtype);
  EXPECT_EQ(a.attention.kernel, b.attention.kernel);
  EXPECT_EQ(a.bytes_guessed, b.bytes_guessed);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.copy_kind, b.copy_kind);
  EXPECT_EQ(a.async, b.async);
  EXPECT_EQ(a.event, b.event);
  EXPECT_EQ(a.non_blocking, b.non_blocking);
  EXPECT_EQ(a.priority, b.priority);
  EXPECT_EQ(an.Name(a.comm), bn.Name(b.comm));
  EXPECT_EQ(a.coll, b.coll);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.redop, b.redop);
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.peer, b.peer);
  EXPECT_EQ(an.Name(a.label), bn.Name(b.label));
}

// Same world, communicators (by name and members) and, rank by rank, the same ops.
inline void ExpectSameWorkload(Workload& a, Workload& b) {
  ASSERT_EQ(a.world_size(), b.world_size());
  ASSERT_EQ(a.communicators().size(), b.communicators().size());
  for (std::size_t i = 0; i < a.communicators().size(); ++i) {
    const CommunicatorSpec& ca = a.communicators()[i];
    const CommunicatorSpec& cb = b.communicators()[i];
    EXPECT_EQ(a.names().Name(ca.name), b.names().Name(cb.name));
    EXPECT_EQ(ca.ranks, cb.ranks);
  }
  for (int rank = 0; rank < a.world_size(); ++rank) {
    const std::vector<Op> ops_a = ReadRank(a, rank);
    const std::vector<Op> ops_b = ReadRank(b, rank);
    ASSERT_EQ(ops_a.size(), ops_b.size()) << "rank " << rank;
    for (std::size_t i = 0; i < ops_a.size(); ++i) {
      ExpectSameOp(ops_a[i], a.names(), ops_b[i], b.names(),
                   "rank " + std::to_string(rank) + " op " + std::to_string(i));
    }
  }
}

// A workload generated on the fly, like a synthetic generator: rank r's op i is a function of
// (r, i), and kernel names are interned only as the ops are produced, so a writer sees the name
// table grow while it reads.
class GeneratedWorkload : public Workload {
 public:
  GeneratedWorkload(int world, int ops_per_rank) : world_(world), ops_per_rank_(ops_per_rank) {
    CommunicatorSpec all{names_.Intern("all"), {}, {}};
    for (int r = 0; r < world; ++r) all.ranks.push_back(r);
    comms_.push_back(all);
  }
  int world_size() const override { return world_; }
  const std::vector<CommunicatorSpec>& communicators() const override { return comms_; }
  NameTable& names() override { return names_; }
  std::string description() const override { return "generated"; }
  Result<std::unique_ptr<OpSource>> OpenRank(int rank) override {
    return std::unique_ptr<OpSource>(std::make_unique<Source>(*this, rank));
  }

  Op MakeOp(int rank, int i) {
    Op op;
    switch (i % 8) {
      case 0:
      case 1:
      case 2:
        op.kind = OpKind::kKernel;
        op.stream = 1 + i % 3;
        op.name = names_.Intern("kernel_" + std::to_string(rank % 5) + "_" + std::to_string(i % 7));
        op.duration = (i % 5 == 0) ? -1 : SimTime{1000} * rank + i;
        if (i % 3 == 0) op.grid = Dim3{static_cast<std::uint32_t>(i + 1), 2, 1};
        if (i % 11 == 0) op.gemm = GemmShape{i + 1, 64, 128, 1, DataType::kFloat8e5m2, i % 2 == 0};
        break;
      case 3:
        op.kind = OpKind::kCollective;
        op.stream = 4;
        op.comm = comms_[0].name;
        op.coll =
            (i % 16 == 3) ? netmodel::CollectiveOp::kAllReduce : netmodel::CollectiveOp::kBroadcast;
        op.root = op.coll == netmodel::CollectiveOp::kBroadcast ? i % world_ : -1;
        op.count = static_cast<std::uint64_t>(i) << 20;
        op.dtype = DataType::kBfloat16;
        break;
      case 4:
        op.kind = OpKind::kMemcpy;
        op.bytes = static_cast<std::uint64_t>(rank) * 4096 + static_cast<std::uint64_t>(i);
        op.copy_kind = static_cast<MemcpyKind>(i % 4);
        op.async = i % 3 != 0;
        break;
      case 5:
        op.kind = (i % 2 == 0) ? OpKind::kEventRecord : OpKind::kStreamWaitEvent;
        op.stream = (i % 3 == 0) ? kPerThreadStream : 2;
        op.event = i % 9;
        break;
      case 6:
        op.kind = OpKind::kHost;
        op.duration = SimTime{7} * i;
        break;
      default:
        op.kind = OpKind::kMarker;
        op.label = names_.Intern(i % 3 == 0 ? "iteration" : "phase " + std::to_string(i % 4));
        break;
    }
    return op;
  }

 private:
  class Source : public OpSource {
   public:
    Source(GeneratedWorkload& workload, int rank) : workload_(workload), rank_(rank) {}
    Result<bool> Next(Op& op) override {
      if (next_ == workload_.ops_per_rank_) return false;
      op = workload_.MakeOp(rank_, next_++);
      return true;
    }

   private:
    GeneratedWorkload& workload_;
    int rank_;
    int next_ = 0;
  };

  int world_;
  int ops_per_rank_;
  NameTable names_;
  std::vector<CommunicatorSpec> comms_;
};

// Little-endian integers inside a binary trace held in a string (docs/trace-format.md layout).
template <typename T>
T GetAt(const std::string& bytes, std::size_t offset) {
  T v{};
  std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}
template <typename T>
void PutAt(std::string& bytes, std::size_t offset, T v) {
  std::memcpy(bytes.data() + offset, &v, sizeof(T));
}

}  // namespace myriad::emulator::testing
