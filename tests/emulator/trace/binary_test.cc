// Binary traces: the documented layout, lazy per-rank reading, and the errors for damaged files.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "myriad/emulator/trace.h"
#include "tests/emulator/trace/trace_test_util.h"

namespace myriad::emulator {
namespace {

using testing::ExpectSameOp;
using testing::ExpectSameWorkload;
using testing::GeneratedWorkload;
using testing::GetAt;
using testing::MustOpen;
using testing::PutAt;
using testing::ReadRank;
using testing::ReadText;
using testing::ScratchDir;
using testing::WriteText;

// Header offsets, as docs/trace-format.md gives them.
constexpr std::size_t kVersionAt = 8, kWorldAt = 12, kFileSizeAt = 16, kNamesAt = 24, kIndexAt = 40,
                      kOpCountAt = 48, kHeaderSize = 56;

struct IndexEntry {
  std::uint64_t offset, length, count;
};
IndexEntry Entry(const std::string& bytes, int rank) {
  const std::size_t at =
      GetAt<std::uint64_t>(bytes, kIndexAt) + 24 * static_cast<std::size_t>(rank);
  return {GetAt<std::uint64_t>(bytes, at), GetAt<std::uint64_t>(bytes, at + 8),
          GetAt<std::uint64_t>(bytes, at + 16)};
}

// Reads a rank until its source fails, and returns the error (empty if it never failed).
std::string RankError(Workload& workload, int rank) {
  Result<std::unique_ptr<OpSource>> source = workload.OpenRank(rank);
  if (!source.ok()) return source.status().message();
  Op op;
  for (;;) {
    Result<bool> more = source.value()->Next(op);
    if (!more.ok()) return more.status().message();
    if (!*more) return "";
  }
}

class BinaryTraceTest : public ::testing::Test {
 protected:
  // A 64-rank generated workload written as a binary trace; its bytes kept for patching.
  void SetUp() override {
    path_ = scratch_.File("gen.mtrace");
    const Status status = WriteBinaryTrace(generated_, path_);
    ASSERT_TRUE(status.ok()) << status.message();
    bytes_ = ReadText(path_);
  }
  std::string Open(const std::string& bytes, const std::string& name) {
    const std::string path = scratch_.File(name);
    WriteText(path, bytes);
    Result<std::unique_ptr<Workload>> trace = OpenTrace(path);
    EXPECT_FALSE(trace.ok()) << name << " opened";
    return trace.ok() ? "" : trace.status().message();
  }

  ScratchDir scratch_;
  GeneratedWorkload generated_{64, 1000};
  std::string path_;
  std::string bytes_;
};

TEST_F(BinaryTraceTest, HeaderIsAsDocumented) {
  ASSERT_GE(bytes_.size(), kHeaderSize);
  EXPECT_EQ(bytes_.substr(0, 8), "MYRTRACE");
  EXPECT_EQ(GetAt<std::uint32_t>(bytes_, kVersionAt), kBinaryTraceVersion);
  EXPECT_EQ(GetAt<std::uint32_t>(bytes_, kWorldAt), 64u);
  EXPECT_EQ(GetAt<std::uint64_t>(bytes_, kFileSizeAt), bytes_.size());
  EXPECT_EQ(GetAt<std::uint64_t>(bytes_, kOpCountAt), 64u * 1000u);
  EXPECT_EQ(GetAt<std::uint64_t>(bytes_, kIndexAt) + 64 * 24, bytes_.size());
  // Blocks follow the header in rank order, each right after the previous one.
  std::uint64_t next = kHeaderSize;
  for (int rank = 0; rank < 64; ++rank) {
    const IndexEntry e = Entry(bytes_, rank);
    EXPECT_EQ(e.offset, next) << rank;
    EXPECT_EQ(e.count, 1000u) << rank;
    next = e.offset + e.length;
  }
  EXPECT_EQ(next, GetAt<std::uint64_t>(bytes_, kNamesAt));
  // Compact: a few bytes per op, not a fixed-size record.
  EXPECT_LT(GetAt<std::uint64_t>(bytes_, kNamesAt), 64u * 1000u * 8u);
}

TEST_F(BinaryTraceTest, ReadsBackEveryRank) {
  auto trace = MustOpen(path_);
  ASSERT_NE(trace, nullptr);
  EXPECT_EQ(trace->world_size(), 64);
  ExpectSameWorkload(generated_, *trace);
}

// Rank 5 decodes from its own block alone: every other rank's block is overwritten with bytes
// that are not ops, and rank 5 still reads correctly while its neighbours report the damage.
TEST_F(BinaryTraceTest, OpensOneRankWithoutTouchingTheOthers) {
  std::string damaged = bytes_;
  for (int rank = 0; rank < 64; ++rank) {
    if (rank == 5) continue;
    const IndexEntry e = Entry(damaged, rank);
    for (std::uint64_t i = 0; i < e.length; ++i) damaged[e.offset + i] = '\xff';
  }
  const std::string path = scratch_.File("damaged.mtrace");
  WriteText(path, damaged);
  auto trace = MustOpen(path);
  ASSERT_NE(trace, nullptr);
  const std::vector<Op> ops = ReadRank(*trace, 5);
  ASSERT_EQ(ops.size(), 1000u);
  for (int i = 0; i < 1000; ++i) {
    ExpectSameOp(generated_.MakeOp(5, i), generated_.names(), ops[static_cast<std::size_t>(i)],
                 trace->names(), "op " + std::to_string(i));
  }
  EXPECT_EQ(RankError(*trace, 4), path + ": rank 4 op 0: unknown op kind");
  EXPECT_EQ(RankError(*trace, 6), path + ": rank 6 op 0: unknown op kind");
}

TEST_F(BinaryTraceTest, SourcesOutliveTheirWorkload) {
  Result<std::unique_ptr<OpSource>> source = [&] {
    auto trace = MustOpen(path_);
    return trace->OpenRank(63);
  }();
  ASSERT_TRUE(source.ok());
  Op op;
  int n = 0;
  while (*source.value()->Next(op)) ++n;
  EXPECT_EQ(n, 1000);
}

TEST_F(BinaryTraceTest, RankOutsideTheTrace) {
  auto trace = MustOpen(path_);
  ASSERT_NE(trace, nullptr);
  Result<std::unique_ptr<OpSource>> source = trace->OpenRank(64);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().message(), path_ + ": rank 64 is outside the trace's 64 ranks");
  EXPECT_FALSE(trace->OpenRank(-1).ok());
}

TEST_F(BinaryTraceTest, BadMagic) {
  std::string bytes = bytes_;
  bytes[3] = 'X';
  const std::string path = scratch_.File("magic.mtrace");
  EXPECT_EQ(Open(bytes, "magic.mtrace"),
            path + ": not a Myriad binary trace (bad magic bytes; expected \"MYRTRACE\")");
}

TEST_F(BinaryTraceTest, UnsupportedVersion) {
  std::string bytes = bytes_;
  PutAt<std::uint32_t>(bytes, kVersionAt, 7);
  EXPECT_EQ(Open(bytes, "v7.mtrace"), scratch_.File("v7.mtrace") +
                                          ": unsupported binary trace version 7 (this Myriad "
                                          "reads versions 1 to 2)");
}

TEST_F(BinaryTraceTest, Truncated) {
  EXPECT_EQ(
      Open(bytes_.substr(0, 4), "a.mtrace"),
      scratch_.File("a.mtrace") + ": truncated binary trace (4 bytes, shorter than its header)");
  EXPECT_EQ(Open(bytes_.substr(0, 30), "b.mtrace"),
            scratch_.File("b.mtrace") +
                ": truncated binary trace (30 bytes, shorter than its 56-byte header)");
  // Recognised by content whatever the name; the header knows the size.
  const std::size_t cut = bytes_.size() - 100;
  EXPECT_EQ(Open(bytes_.substr(0, cut), "c.bin"),
            scratch_.File("c.bin") + ": truncated binary trace (" + std::to_string(cut) +
                " of its " + std::to_string(bytes_.size()) + " bytes)");
}

TEST_F(BinaryTraceTest, TrailingBytes) {
  EXPECT_EQ(Open(bytes_ + "junk", "d.mtrace"),
            scratch_.File("d.mtrace") + ": 4 unexpected bytes after the end of the binary trace (" +
                std::to_string(bytes_.size()) + " bytes)");
}

TEST_F(BinaryTraceTest, CorruptHeaderAndIndex) {
  std::string world = bytes_;
  PutAt<std::uint32_t>(world, kWorldAt, 65);  // the index no longer fits
  EXPECT_EQ(
      Open(world, "w.mtrace"),
      scratch_.File("w.mtrace") + ": corrupt header: its section offsets do not fit the file");
  std::string index = bytes_;
  const std::size_t entry = GetAt<std::uint64_t>(index, kIndexAt) + 24 * 9;
  PutAt<std::uint64_t>(index, entry, GetAt<std::uint64_t>(index, kNamesAt) + 1);
  EXPECT_EQ(Open(index, "i.mtrace"),
            scratch_.File("i.mtrace") + ": corrupt index entry for rank 9");
  std::string total = bytes_;
  PutAt<std::uint64_t>(total, kOpCountAt, 12);
  EXPECT_EQ(Open(total, "t.mtrace"),
            scratch_.File("t.mtrace") + ": corrupt index: 64000 ops, the header says 12");
}

TEST_F(BinaryTraceTest, BlockEndingInsideAnOp) {
  std::string bytes = bytes_;
  const std::size_t entry = GetAt<std::uint64_t>(bytes, kIndexAt);  // rank 0
  PutAt<std::uint64_t>(bytes, entry + 8, Entry(bytes, 0).length - 1);
  const std::string path = scratch_.File("short.mtrace");
  WriteText(path, bytes);
  auto trace = MustOpen(path);
  ASSERT_NE(trace, nullptr);
  EXPECT_EQ(RankError(*trace, 0),
            path + ": rank 0 op 999: truncated op (the block ends inside it)");
  EXPECT_EQ(RankError(*trace, 1), "");
}

TEST_F(BinaryTraceTest, BytesLeftAfterTheLastOp) {
  std::string bytes = bytes_;
  const std::size_t entry = GetAt<std::uint64_t>(bytes, kIndexAt) + 24 * 2;  // rank 2
  PutAt<std::uint64_t>(bytes, entry + 16, 999);
  PutAt<std::uint64_t>(bytes, kOpCountAt, 63999);
  const std::string path = scratch_.File("left.mtrace");
  WriteText(path, bytes);
  auto trace = MustOpen(path);
  ASSERT_NE(trace, nullptr);
  const std::string error = RankError(*trace, 2);
  EXPECT_EQ(error.rfind(path + ": rank 2 op 999: ", 0), 0u) << error;
  EXPECT_NE(error.find("bytes left after the rank's last op"), std::string::npos) << error;
}

// A rank long enough that the reader drops pages behind it and decodes many ops in its block's
// zero-padded tail copy; every op must still come out right.
TEST(BinaryTraceLongRankTest, ReadsAMillionOpsRank) {
  ScratchDir scratch;
  GeneratedWorkload generated(1, 1'000'000);
  ASSERT_TRUE(WriteBinaryTrace(generated, scratch.File("long.mtrace")).ok());
  auto trace = MustOpen(scratch.File("long.mtrace"));
  ASSERT_NE(trace, nullptr);
  Result<std::unique_ptr<OpSource>> source = trace->OpenRank(0);
  ASSERT_TRUE(source.ok());
  Op op;
  int i = 0;
  int mismatches = 0;
  for (; *source.value()->Next(op); ++i) {
    const Op want = generated.MakeOp(0, i);
    const bool same = op.kind == want.kind && op.stream == want.stream &&
                      op.duration == want.duration && op.bytes == want.bytes &&
                      op.event == want.event && op.count == want.count && op.root == want.root &&
                      op.grid == want.grid && op.gemm.m == want.gemm.m &&
                      trace->names().Name(op.name) == generated.names().Name(want.name) &&
                      trace->names().Name(op.label) == generated.names().Name(want.label);
    if (!same && ++mismatches < 5) ADD_FAILURE() << "op " << i << " differs";
  }
  EXPECT_EQ(i, 1'000'000);
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace myriad::emulator
