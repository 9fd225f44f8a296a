// Conversions between the two formats keep every op, field by field, and JSON Lines output is
// canonical (writing what was read gives the same bytes).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "myriad/emulator/trace.h"
#include "tests/emulator/trace/trace_test_util.h"

namespace myriad::emulator {
namespace {

using testing::DataPath;
using testing::ExpectSameWorkload;
using testing::GeneratedWorkload;
using testing::MustOpen;
using testing::ReadRank;
using testing::ReadText;
using testing::ScratchDir;
using testing::WriteText;

TEST(RoundTripTest, JsonlToBinaryKeepsEveryOpAndField) {
  ScratchDir scratch;
  auto original = MustOpen(DataPath("all_ops.jsonl"));
  ASSERT_NE(original, nullptr);
  const std::string binary = scratch.File("all_ops.mtrace");
  const Status written = WriteBinaryTrace(*original, binary);
  ASSERT_TRUE(written.ok()) << written.message();
  auto reread = MustOpen(binary);
  ASSERT_NE(reread, nullptr);
  EXPECT_EQ(reread->description(), "trace " + binary);
  ExpectSameWorkload(*original, *reread);
  // The binary form keeps the name table itself, ids included.
  ASSERT_EQ(reread->names().size(), original->names().size());
  for (NameId id = 0; id < original->names().size(); ++id) {
    EXPECT_EQ(reread->names().Name(id), original->names().Name(id));
  }
}

TEST(RoundTripTest, JsonlToJsonlIsCanonical) {
  ScratchDir scratch;
  auto original = MustOpen(DataPath("all_ops.jsonl"));
  ASSERT_NE(original, nullptr);
  const std::string first = scratch.File("first.jsonl");
  const std::string second = scratch.File("second.jsonl");
  ASSERT_TRUE(WriteJsonlTrace(*original, first).ok());
  auto reread = MustOpen(first);
  ASSERT_NE(reread, nullptr);
  ExpectSameWorkload(*original, *reread);
  ASSERT_TRUE(WriteJsonlTrace(*reread, second).ok());
  EXPECT_EQ(ReadText(first), ReadText(second));
}

TEST(RoundTripTest, BinaryAndJsonlConvertToTheSameCanonicalText) {
  ScratchDir scratch;
  auto original = MustOpen(DataPath("all_ops.jsonl"));
  ASSERT_NE(original, nullptr);
  ASSERT_TRUE(WriteBinaryTrace(*original, scratch.File("t.mtrace")).ok());
  auto binary = MustOpen(scratch.File("t.mtrace"));
  ASSERT_NE(binary, nullptr);
  ASSERT_TRUE(WriteJsonlTrace(*original, scratch.File("from_jsonl.jsonl")).ok());
  ASSERT_TRUE(WriteJsonlTrace(*binary, scratch.File("from_binary.jsonl")).ok());
  EXPECT_EQ(ReadText(scratch.File("from_jsonl.jsonl")),
            ReadText(scratch.File("from_binary.jsonl")));
}

// The canonical form is documented (docs/trace-format.md): field order, defaults left out.
TEST(RoundTripTest, CanonicalTextIsAsDocumented) {
  ScratchDir scratch;
  auto trace = MustOpen(DataPath("defaults.jsonl"));
  ASSERT_NE(trace, nullptr);
  ASSERT_TRUE(WriteJsonlTrace(*trace, scratch.File("out.jsonl")).ok());
  EXPECT_EQ(ReadText(scratch.File("out.jsonl")),
            R"({"myriad_trace":2,"ranks":2}
{"op":"comm","comm":"all","ranks":[0,1]}
{"rank":1,"op":"kernel","name":"k"}
{"rank":1,"op":"kernel","name":"g","gemm":{"m":8,"n":16,"k":32}}
{"rank":1,"op":"memcpy","bytes":8}
{"rank":1,"op":"memset","bytes":8}
{"rank":1,"op":"stream_create","stream":5}
{"rank":1,"op":"collective","comm":"all","coll":"allreduce","count":1,"dtype":"int8"}
{"rank":1,"op":"marker"}
{"rank":1,"op":"stream_sync"}
)");
}

TEST(RoundTripTest, DurationsSurviveJsonlExactly) {
  ScratchDir scratch;
  InMemoryWorkload workload(1, "durations");
  const std::vector<SimTime> durations = {
      0, 1, 999'999, 1'000'000, 1'000'001, 12'345'678, 123'456'789'012'345};
  for (SimTime d : durations) {
    Op op;
    op.kind = OpKind::kHost;
    op.duration = d;
    workload.AddOp(0, op);
  }
  ASSERT_TRUE(WriteJsonlTrace(workload, scratch.File("d.jsonl")).ok());
  EXPECT_NE(ReadText(scratch.File("d.jsonl")).find(R"("duration_us":0.000001})"),
            std::string::npos);
  EXPECT_NE(ReadText(scratch.File("d.jsonl")).find(R"("duration_us":123456789.012345})"),
            std::string::npos);
  auto reread = MustOpen(scratch.File("d.jsonl"));
  ASSERT_NE(reread, nullptr);
  const std::vector<Op> ops = ReadRank(*reread, 0);
  ASSERT_EQ(ops.size(), durations.size());
  for (std::size_t i = 0; i < ops.size(); ++i) EXPECT_EQ(ops[i].duration, durations[i]);
}

TEST(RoundTripTest, NamesAreEscapedInJsonl) {
  ScratchDir scratch;
  InMemoryWorkload workload(1, "names");
  Op op;
  op.kind = OpKind::kKernel;
  op.name = workload.names().Intern("void k<\"q\", '\\'>(float*)\t");
  workload.AddOp(0, op);
  ASSERT_TRUE(WriteJsonlTrace(workload, scratch.File("n.jsonl")).ok());
  auto reread = MustOpen(scratch.File("n.jsonl"));
  ASSERT_NE(reread, nullptr);
  const std::vector<Op> ops = ReadRank(*reread, 0);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(reread->names().Name(ops[0].name), "void k<\"q\", '\\'>(float*)\t");
}

TEST(RoundTripTest, GeneratedWorkloadThroughBothFormats) {
  ScratchDir scratch;
  GeneratedWorkload generated(8, 500);
  ASSERT_TRUE(WriteBinaryTrace(generated, scratch.File("g.mtrace")).ok());
  auto binary = MustOpen(scratch.File("g.mtrace"));
  ASSERT_NE(binary, nullptr);
  ExpectSameWorkload(generated, *binary);
  ASSERT_TRUE(WriteJsonlTrace(*binary, scratch.File("g.jsonl")).ok());
  auto jsonl = MustOpen(scratch.File("g.jsonl"));
  ASSERT_NE(jsonl, nullptr);
  ExpectSameWorkload(generated, *jsonl);
}

// A binary trace is read through a mapping of the old file while the new one is written beside
// it and renamed over it, so a trace can be rewritten in place.
TEST(RoundTripTest, RewritesATraceInPlace) {
  ScratchDir scratch;
  GeneratedWorkload generated(4, 300);
  const std::string path = scratch.File("same.mtrace");
  ASSERT_TRUE(WriteBinaryTrace(generated, path).ok());
  auto binary = MustOpen(path);
  ASSERT_NE(binary, nullptr);
  ASSERT_TRUE(WriteBinaryTrace(*binary, path).ok());
  auto rewritten = MustOpen(path);
  ASSERT_NE(rewritten, nullptr);
  ExpectSameWorkload(generated, *rewritten);
}

// TF32 is a GEMM's math: kept by both formats as a GEMM's type (binary: 12).
TEST(RoundTripTest, Tf32GemmsSurviveBothFormats) {
  ScratchDir scratch;
  const std::string jsonl = scratch.File("tf32.jsonl");
  WriteText(jsonl,
            "{\"myriad_trace\": 2, \"ranks\": 1}\n"
            "{\"rank\": 0, \"op\": \"kernel\", \"name\": \"sgemm\", \"gemm\": {\"m\": 64, "
            "\"n\": 64, \"k\": 64, \"dtype\": \"tf32\"}}\n");
  auto original = MustOpen(jsonl);
  ASSERT_NE(original, nullptr);
  const std::string binary = scratch.File("tf32.mtrace");
  ASSERT_TRUE(WriteBinaryTrace(*original, binary).ok());
  auto reread = MustOpen(binary);
  ASSERT_NE(reread, nullptr);
  auto source = reread->OpenRank(0);
  ASSERT_TRUE(source.ok());
  Op op;
  ASSERT_TRUE(*(*source)->Next(op));
  EXPECT_EQ(op.gemm.dtype, DataType::kTfloat32);
  // Not a collective's: the writer refuses it there.
  InMemoryWorkload workload(1, "tf32 collective");
  CommunicatorSpec world;
  world.name = workload.names().Intern("world");
  world.ranks = {0};
  workload.AddCommunicator(world);
  Op all_reduce;
  all_reduce.kind = OpKind::kCollective;
  all_reduce.comm = world.name;
  all_reduce.count = 1;
  all_reduce.dtype = DataType::kTfloat32;
  workload.AddOp(0, all_reduce);
  EXPECT_FALSE(WriteBinaryTrace(workload, scratch.File("bad.mtrace")).ok());
}

TEST(RoundTripTest, WriterRejectsWhatTheFormatCannotSay) {
  ScratchDir scratch;
  InMemoryWorkload workload(2, "bad");
  Op op;
  op.kind = OpKind::kCollective;
  op.comm = workload.names().Intern("ghost");  // never declared
  op.count = 1;
  workload.AddOp(1, op);
  const std::string path = scratch.File("bad.mtrace");
  const Status binary = WriteBinaryTrace(workload, path);
  ASSERT_FALSE(binary.ok());
  EXPECT_EQ(binary.message(),
            path +
                ": rank 1 op 0 (collective): communicator name id 1 is not a declared "
                "communicator");
  // Nothing half-written is left behind.
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(scratch.dir()));

  InMemoryWorkload host(1, "host");
  Op no_duration;
  no_duration.kind = OpKind::kHost;
  host.AddOp(0, no_duration);
  const Status jsonl = WriteJsonlTrace(host, scratch.File("h.jsonl"));
  ASSERT_FALSE(jsonl.ok());
  EXPECT_EQ(jsonl.message(),
            scratch.File("h.jsonl") + ": rank 0 op 0 (host): host op without a duration");
  EXPECT_FALSE(WriteBinaryTrace(host, scratch.File("h.mtrace")).ok());
  EXPECT_FALSE(std::filesystem::exists(scratch.File("h.jsonl")));
}

TEST(RoundTripTest, WriterReportsAnUnwritablePath) {
  auto trace = MustOpen(DataPath("defaults.jsonl"));
  ASSERT_NE(trace, nullptr);
  const Status status = WriteBinaryTrace(*trace, "/nonexistent-dir/t.mtrace");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "/nonexistent-dir/t.mtrace: cannot create trace file: No such file or directory");
}

// Every example under traces/ loads, and survives both conversions.
TEST(RoundTripTest, BundledExampleTraces) {
  ScratchDir scratch;
  int examples = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(MYRIAD_SOURCE_DIR) + "/traces")) {
    if (entry.path().extension() != ".jsonl") continue;
    ++examples;
    SCOPED_TRACE(entry.path().string());
    auto trace = MustOpen(entry.path().string());
    ASSERT_NE(trace, nullptr);
    ASSERT_TRUE(WriteBinaryTrace(*trace, scratch.File("example.mtrace")).ok());
    auto binary = MustOpen(scratch.File("example.mtrace"));
    ASSERT_NE(binary, nullptr);
    ExpectSameWorkload(*trace, *binary);
  }
  EXPECT_GE(examples, 2);
}

// What the examples are documented to contain.
TEST(RoundTripTest, TwoRankOverlapExample) {
  auto trace = MustOpen(std::string(MYRIAD_SOURCE_DIR) + "/traces/two-rank-overlap.jsonl");
  ASSERT_NE(trace, nullptr);
  ASSERT_EQ(trace->world_size(), 2);
  for (int rank = 0; rank < 2; ++rank) {
    const std::vector<Op> ops = ReadRank(*trace, rank);
    int markers = 0, allreduces = 0, stream1_kernels = 0;
    for (const Op& op : ops) {
      markers += op.kind == OpKind::kMarker;
      allreduces += op.kind == OpKind::kCollective && op.stream == 2;
      stream1_kernels += op.kind == OpKind::kKernel && op.stream == 1;
    }
    EXPECT_EQ(markers, 3) << "rank " << rank;  // two iterations between three markers
    EXPECT_EQ(allreduces, 2) << "rank " << rank;
    EXPECT_GE(stream1_kernels, 4) << "rank " << rank;
  }
}

TEST(RoundTripTest, PipelineExample) {
  auto trace = MustOpen(std::string(MYRIAD_SOURCE_DIR) + "/traces/pipeline-2stage.jsonl");
  ASSERT_NE(trace, nullptr);
  ASSERT_EQ(trace->world_size(), 2);
  const std::vector<Op> stage0 = ReadRank(*trace, 0);
  const std::vector<Op> stage1 = ReadRank(*trace, 1);
  const auto count = [](const std::vector<Op>& ops, OpKind kind) {
    int n = 0;
    for (const Op& op : ops) n += op.kind == kind;
    return n;
  };
  // Four micro-batches: activations forward, gradients back.
  EXPECT_EQ(count(stage0, OpKind::kSend), 4);
  EXPECT_EQ(count(stage0, OpKind::kRecv), 4);
  EXPECT_EQ(count(stage1, OpKind::kSend), 4);
  EXPECT_EQ(count(stage1, OpKind::kRecv), 4);
}

}  // namespace
}  // namespace myriad::emulator
