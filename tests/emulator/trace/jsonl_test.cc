// JSON Lines traces: every op kind and field, the defaults, and the exact one-line errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "myriad/emulator/trace.h"
#include "tests/emulator/trace/trace_test_util.h"

namespace myriad::emulator {
namespace {

using netmodel::CollectiveOp;
using testing::DataPath;
using testing::MustOpen;
using testing::ReadRank;
using testing::ScratchDir;
using testing::WriteText;

TEST(JsonlTraceTest, ReadsHeaderAndCommunicators) {
  auto trace = MustOpen(DataPath("all_ops.jsonl"));
  ASSERT_NE(trace, nullptr);
  EXPECT_EQ(trace->world_size(), 4);
  EXPECT_EQ(trace->description(), "trace " + DataPath("all_ops.jsonl"));
  ASSERT_EQ(trace->communicators().size(), 2u);
  EXPECT_EQ(trace->names().Name(trace->communicators()[0].name), "world");
  EXPECT_EQ(trace->communicators()[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(trace->names().Name(trace->communicators()[1].name), "pair");
  EXPECT_EQ(trace->communicators()[1].ranks, (std::vector<int>{1, 0}));
}

TEST(JsonlTraceTest, ReadsEveryOpKindAndField) {
  auto trace = MustOpen(DataPath("all_ops.jsonl"));
  ASSERT_NE(trace, nullptr);
  const NameTable& names = trace->names();
  const std::vector<Op> ops = ReadRank(*trace, 0);
  ASSERT_EQ(ops.size(), 32u);
  std::size_t i = 0;

  const Op& create1 = ops[i++];
  EXPECT_EQ(create1.kind, OpKind::kStreamCreate);
  EXPECT_EQ(create1.stream, 1);
  EXPECT_TRUE(create1.non_blocking);
  EXPECT_EQ(create1.priority, -1);
  const Op& create2 = ops[i++];
  EXPECT_EQ(create2.stream, 2);
  EXPECT_FALSE(create2.non_blocking);

  const Op& malloc_op = ops[i++];
  EXPECT_EQ(malloc_op.kind, OpKind::kMalloc);
  EXPECT_EQ(malloc_op.bytes, 1073741824u);

  const Op& h2d = ops[i++];
  EXPECT_EQ(h2d.kind, OpKind::kMemcpy);
  EXPECT_EQ(h2d.stream, kLegacyStream);
  EXPECT_EQ(h2d.bytes, 4096u);
  EXPECT_EQ(h2d.copy_kind, MemcpyKind::kHostToDevice);
  EXPECT_FALSE(h2d.async);
  EXPECT_EQ(h2d.duration, -1);

  const Op& peer = ops[i++];
  EXPECT_EQ(peer.stream, 1);
  EXPECT_EQ(peer.bytes, 1000000u);  // written 1e6
  EXPECT_EQ(peer.copy_kind, MemcpyKind::kPeer);
  EXPECT_TRUE(peer.async);
  EXPECT_EQ(peer.duration, 2'500'000);  // 2.5 us in ps

  const Op& memset_op = ops[i++];
  EXPECT_EQ(memset_op.kind, OpKind::kMemset);
  EXPECT_EQ(memset_op.stream, kPerThreadStream);
  EXPECT_EQ(memset_op.bytes, 256u);
  EXPECT_FALSE(memset_op.async);
  EXPECT_EQ(memset_op.duration, 250'000);

  const Op& gemm = ops[i++];
  EXPECT_EQ(gemm.kind, OpKind::kKernel);
  EXPECT_EQ(gemm.stream, 1);
  EXPECT_EQ(names.Name(gemm.name), "sm90_gemm_128x128");
  EXPECT_EQ(gemm.grid, (Dim3{16, 8, 2}));
  EXPECT_EQ(gemm.block, (Dim3{256, 1, 1}));
  EXPECT_EQ(gemm.shared_mem, 49152u);
  EXPECT_EQ(gemm.duration, -1);
  EXPECT_EQ(gemm.gemm.m, 4096);
  EXPECT_EQ(gemm.gemm.n, 4096);
  EXPECT_EQ(gemm.gemm.k, 1024);
  EXPECT_EQ(gemm.gemm.batch, 2);
  EXPECT_EQ(gemm.gemm.dtype, DataType::kFloat16);

  const Op& elementwise = ops[i++];
  EXPECT_EQ(names.Name(elementwise.name), "elementwise<float>");
  EXPECT_EQ(elementwise.duration, 12'345'678);
  EXPECT_EQ(elementwise.grid, (Dim3{80, 1, 1}));
  EXPECT_EQ(elementwise.gemm.m, 0);
  EXPECT_EQ(elementwise.bytes, 0u);

  const Op& norm = ops[i++];
  EXPECT_EQ(norm.bytes, 67108864u);  // a memory-bound kernel
  EXPECT_TRUE(norm.bytes_guessed);
  EXPECT_EQ(norm.attention.batch, 0);
  const Op& attention = ops[i++];
  EXPECT_EQ(attention.attention.batch, 4);
  EXPECT_EQ(attention.attention.heads, 12);
  EXPECT_EQ(attention.attention.seq_q, 1024);
  EXPECT_EQ(attention.attention.seq_kv, 2048);
  EXPECT_EQ(attention.attention.head_dim, 64);
  EXPECT_FALSE(attention.attention.causal);
  EXPECT_TRUE(attention.attention.backward);
  EXPECT_EQ(attention.attention.dtype, DataType::kFloat16);
  EXPECT_EQ(attention.attention.kernel, AttentionKernel::kFlash3);

  for (OpKind kind :
       {OpKind::kEventRecord, OpKind::kStreamWaitEvent, OpKind::kEventQuery, OpKind::kEventSync}) {
    const Op& event = ops[i++];
    EXPECT_EQ(event.kind, kind);
    EXPECT_EQ(event.event, 7);
  }
  EXPECT_EQ(ops[i - 4].stream, 1);  // event_record
  EXPECT_EQ(ops[i - 3].stream, 2);  // stream_wait_event
  EXPECT_EQ(ops[i - 1].stream, kLegacyStream);

  EXPECT_EQ(ops[i++].kind, OpKind::kGroupStart);
  const Op& recv = ops[i++];
  EXPECT_EQ(recv.kind, OpKind::kRecv);
  EXPECT_EQ(recv.stream, 2);
  EXPECT_EQ(names.Name(recv.comm), "pair");
  EXPECT_EQ(recv.peer, 0);
  EXPECT_EQ(recv.count, 1024u);
  EXPECT_EQ(recv.dtype, DataType::kBfloat16);
  const Op& send = ops[i++];
  EXPECT_EQ(send.kind, OpKind::kSend);
  EXPECT_EQ(send.peer, 0);
  EXPECT_EQ(ops[i++].kind, OpKind::kGroupEnd);

  const Op& allreduce = ops[i++];
  EXPECT_EQ(allreduce.kind, OpKind::kCollective);
  EXPECT_EQ(allreduce.stream, 2);
  EXPECT_EQ(names.Name(allreduce.comm), "world");
  EXPECT_EQ(allreduce.coll, CollectiveOp::kAllReduce);
  EXPECT_EQ(allreduce.count, 1048576u);
  EXPECT_EQ(allreduce.dtype, DataType::kFloat32);
  EXPECT_EQ(allreduce.redop, ReduceOp::kMax);
  EXPECT_EQ(allreduce.root, -1);

  const Op& broadcast = ops[i++];
  EXPECT_EQ(broadcast.coll, CollectiveOp::kBroadcast);
  EXPECT_EQ(broadcast.dtype, DataType::kInt8);
  EXPECT_EQ(broadcast.root, 3);
  EXPECT_EQ(broadcast.redop, ReduceOp::kSum);

  const Op& allgather = ops[i++];
  EXPECT_EQ(allgather.coll, CollectiveOp::kAllGather);
  EXPECT_EQ(allgather.dtype, DataType::kUint64);
  const Op& reducescatter = ops[i++];
  EXPECT_EQ(reducescatter.coll, CollectiveOp::kReduceScatter);
  EXPECT_EQ(reducescatter.dtype, DataType::kFloat8e4m3);
  EXPECT_EQ(reducescatter.redop, ReduceOp::kAvg);
  const Op& reduce = ops[i++];
  EXPECT_EQ(reduce.coll, CollectiveOp::kReduce);
  EXPECT_EQ(reduce.dtype, DataType::kFloat64);
  EXPECT_EQ(reduce.redop, ReduceOp::kMin);
  EXPECT_EQ(reduce.root, 1);
  const Op& alltoall = ops[i++];
  EXPECT_EQ(alltoall.coll, CollectiveOp::kAllToAll);
  EXPECT_EQ(alltoall.dtype, DataType::kInt32);
  const Op& gather = ops[i++];
  EXPECT_EQ(gather.coll, CollectiveOp::kGather);
  EXPECT_EQ(gather.dtype, DataType::kUint8);
  EXPECT_EQ(gather.root, 0);
  const Op& scatter = ops[i++];
  EXPECT_EQ(scatter.coll, CollectiveOp::kScatter);
  EXPECT_EQ(scatter.dtype, DataType::kInt64);
  EXPECT_EQ(scatter.root, 2);

  const Op& stream_sync = ops[i++];
  EXPECT_EQ(stream_sync.kind, OpKind::kStreamSync);
  EXPECT_EQ(stream_sync.stream, 2);
  EXPECT_EQ(ops[i++].kind, OpKind::kDeviceSync);
  const Op& host = ops[i++];
  EXPECT_EQ(host.kind, OpKind::kHost);
  EXPECT_EQ(host.duration, 100 * kPicosPerMicro);
  const Op& iteration = ops[i++];
  EXPECT_EQ(iteration.kind, OpKind::kMarker);
  EXPECT_EQ(names.Name(iteration.label), "iteration");
  const Op& checkpoint = ops[i++];
  EXPECT_EQ(names.Name(checkpoint.label), "checkpoint");
  const Op& free_op = ops[i++];
  EXPECT_EQ(free_op.kind, OpKind::kFree);
  EXPECT_EQ(free_op.bytes, 1073741824u);
  EXPECT_EQ(i, ops.size());
}

TEST(JsonlTraceTest, KeepsEachRanksProgramOrderAcrossInterleavedLines) {
  auto trace = MustOpen(DataPath("all_ops.jsonl"));
  ASSERT_NE(trace, nullptr);
  const std::vector<Op> rank1 = ReadRank(*trace, 1);
  ASSERT_EQ(rank1.size(), 7u);
  const std::vector<OpKind> kinds = {
      OpKind::kStreamCreate, OpKind::kGroupStart, OpKind::kSend,      OpKind::kRecv,
      OpKind::kGroupEnd,     OpKind::kCollective, OpKind::kCollective};
  for (std::size_t i = 0; i < kinds.size(); ++i) EXPECT_EQ(rank1[i].kind, kinds[i]) << i;
  EXPECT_EQ(rank1[5].coll, CollectiveOp::kAllReduce);  // written "all_reduce"
  EXPECT_EQ(rank1[5].dtype, DataType::kFloat32);       // written "float"
  const std::vector<Op> rank2 = ReadRank(*trace, 2);
  ASSERT_EQ(rank2.size(), 3u);
  EXPECT_EQ(rank2[2].kind, OpKind::kHost);
  EXPECT_EQ(rank2[2].duration, 0);
  EXPECT_EQ(ReadRank(*trace, 3).size(), 2u);
  // Each OpenRank starts the rank's program from its first op.
  EXPECT_EQ(ReadRank(*trace, 1).size(), 7u);
}

TEST(JsonlTraceTest, FillsInDefaults) {
  auto trace = MustOpen(DataPath("defaults.jsonl"));
  ASSERT_NE(trace, nullptr);
  EXPECT_TRUE(ReadRank(*trace, 0).empty());
  const std::vector<Op> ops = ReadRank(*trace, 1);
  ASSERT_EQ(ops.size(), 8u);
  const Op& kernel = ops[0];
  EXPECT_EQ(kernel.stream, kLegacyStream);
  EXPECT_EQ(kernel.duration, -1);
  EXPECT_EQ(kernel.grid, Dim3{});
  EXPECT_EQ(kernel.block, Dim3{});
  EXPECT_EQ(kernel.shared_mem, 0u);
  EXPECT_EQ(kernel.gemm.m, 0);
  const Op& gemm = ops[1];
  EXPECT_EQ(gemm.gemm.m, 8);
  EXPECT_EQ(gemm.gemm.batch, 1);
  EXPECT_EQ(gemm.gemm.dtype, DataType::kBfloat16);
  const Op& memcpy_op = ops[2];
  EXPECT_EQ(memcpy_op.copy_kind, MemcpyKind::kDeviceToDevice);
  EXPECT_TRUE(memcpy_op.async);
  EXPECT_EQ(memcpy_op.duration, -1);
  EXPECT_TRUE(ops[3].async);
  EXPECT_EQ(ops[3].duration, -1);
  const Op& create = ops[4];
  EXPECT_EQ(create.stream, 5);
  EXPECT_FALSE(create.non_blocking);
  EXPECT_EQ(create.priority, 0);
  const Op& allreduce = ops[5];
  EXPECT_EQ(allreduce.redop, ReduceOp::kSum);
  EXPECT_EQ(allreduce.root, -1);
  EXPECT_EQ(allreduce.stream, kLegacyStream);
  EXPECT_EQ(trace->names().Name(ops[6].label), "iteration");
  EXPECT_EQ(ops[7].kind, OpKind::kStreamSync);
  EXPECT_EQ(ops[7].stream, kLegacyStream);
}

TEST(JsonlTraceTest, IgnoresCommentsBlankLinesAndCarriageReturns) {
  ScratchDir scratch;
  const std::string path = scratch.File("crlf.jsonl");
  WriteText(path,
            "# comment before the header\r\n"
            "\r\n"
            "   \t\r\n"
            "{\"myriad_trace\": 1, \"ranks\": 1}\r\n"
            "  # indented comment\r\n"
            "{\"rank\": 0, \"op\": \"host\", \"duration_us\": 1.5}\r\n"
            "{\"rank\": 0, \"op\": \"kernel\", \"name\": \"k\", \"duration_us\": 3}");  // no \n
  auto trace = MustOpen(path);
  ASSERT_NE(trace, nullptr);
  const std::vector<Op> ops = ReadRank(*trace, 0);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].duration, 1'500'000);
  EXPECT_EQ(ops[1].duration, 3'000'000);
}

TEST(JsonlTraceTest, RankOutsideTheTraceIsAnErrorFromOpenRank) {
  auto trace = MustOpen(DataPath("all_ops.jsonl"));
  ASSERT_NE(trace, nullptr);
  Result<std::unique_ptr<OpSource>> source = trace->OpenRank(4);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().message(),
            "trace " + DataPath("all_ops.jsonl") + ": rank 4 is outside its 4 ranks");
  EXPECT_FALSE(trace->OpenRank(-1).ok());
}

TEST(JsonlTraceTest, GuessedBytesNeedBytes) {
  ScratchDir scratch;
  const std::string path = scratch.File("guess.jsonl");
  WriteText(path,
            "{\"myriad_trace\": 2, \"ranks\": 1}\n"
            "{\"rank\": 0, \"op\": \"kernel\", \"name\": \"k\", \"bytes_guessed\": true}\n");
  EXPECT_EQ(OpenTrace(path).status().message(),
            path + ":2: kernel: field 'bytes_guessed' needs the 'bytes' it says were guessed");
}

TEST(JsonlTraceTest, MissingFileIsNotFound) {
  Result<std::unique_ptr<Workload>> trace = OpenTrace("/nonexistent/run.jsonl");
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(trace.status().message(),
            "/nonexistent/run.jsonl: cannot open trace file: No such file or directory");
}

// A malformed trace: its lines after the header, and the error expected after "PATH:".
struct BadTrace {
  std::string name;
  std::string body;  // follows a header line of 16 ranks and two communicators
  std::string error;
};
void PrintTo(const BadTrace& trace, std::ostream* os) { *os << trace.name; }

constexpr const char* kHeader =
    "{\"myriad_trace\": 1, \"ranks\": 16}\n"
    "{\"op\": \"comm\", \"comm\": \"tp0\", \"ranks\": [0, 1]}\n"
    "{\"op\": \"comm\", \"comm\": \"dp0\", \"ranks\": [0, 8]}\n";

std::vector<BadTrace> BadTraces() {
  return {
      {"MissingKernelName", R"({"rank": 0, "op": "kernel"})", "4: kernel: missing field 'name'"},
      {"UnknownCommunicator",
       R"({"rank": 0, "op": "collective", "comm": "tp3",)"
       R"( "coll": "allreduce", "count": 1, "dtype": "float32"})",
       R"(4: unknown communicator 'tp3' (declare it with {"op":"comm",...} first))"},
      {"RankOutsideWorld", R"({"rank": 17, "op": "device_sync"})",
       "4: rank 17 is outside the trace's 16 ranks"},
      {"MissingRank", R"({"op": "device_sync"})", "4: device_sync: missing field 'rank'"},
      {"NegativeRank", R"({"rank": -1, "op": "device_sync"})",
       "4: device_sync: field 'rank' must be a non-negative integer"},
      {"MissingOp", R"({"rank": 0})", "4: missing field 'op'"},
      {"OpNotAString", R"({"rank": 0, "op": 3})", "4: field 'op' must be a string"},
      {"UnknownOp", R"({"rank": 0, "op": "kernal"})",
       "4: unknown op 'kernal' (known: comm, kernel, memcpy, memset, event_record, "
       "stream_wait_event, event_sync, event_query, stream_sync, device_sync, stream_create, "
       "malloc, free, collective, send, recv, group_start, group_end, host, marker)"},
      {"MisspeltField", R"({"rank": 0, "op": "kernel", "nme": "k"})",
       "4: kernel: unknown field 'nme' (did you mean 'name'?)"},
      {"UnknownField", R"({"rank": 0, "op": "kernel", "name": "k", "colour": "red"})",
       "4: kernel: unknown field 'colour'"},
      {"FieldOfAnotherOp", R"({"rank": 0, "op": "kernel", "name": "k", "count": 4})",
       "4: kernel: field 'count' does not apply to kernel ops (only to collective, send, recv)"},
      {"AttentionNotAnObject", R"({"rank": 0, "op": "kernel", "name": "k", "attention": 4})",
       "4: kernel: field 'attention' must be an object {\"batch\":..,\"heads\":..,"
       "\"seq_q\":..,\"seq_kv\":..,\"head_dim\":..}"},
      {"AttentionWithoutHeads",
       R"({"rank": 0, "op": "kernel", "name": "k", "attention": {"batch": 1, "seq_q": 8, "seq_kv": 8, "head_dim": 64}})",
       "4: kernel: attention: missing field 'heads'"},
      {"StreamOnHostOp", R"({"rank": 0, "op": "host", "duration_us": 1, "stream": 1})",
       "4: host: field 'stream' does not apply to host ops (only to kernel, memcpy, memset, "
       "event_record, stream_wait_event, stream_sync, stream_create, collective, send, recv)"},
      {"DuplicateField", R"({"rank": 0, "op": "kernel", "name": "a", "name": "b"})",
       "4: duplicate field 'name'"},
      {"InvalidJson", R"({"rank": 0, "op": "kernel", name: "k"})",
       "4: invalid JSON at column 30: syntax error while parsing object key - invalid literal; "
       "last read: '\"kernel\", na'; expected string literal"},
      {"NotAnObject", "[1, 2]", "4: expected a JSON object, found an array"},
      {"SecondHeader", R"({"myriad_trace": 1, "ranks": 16})",
       "4: a second header line (the header is line 1)"},
      {"HostWithoutDuration", R"({"rank": 0, "op": "host"})",
       "4: host: missing field 'duration_us'"},
      {"NegativeDuration", R"({"rank": 0, "op": "kernel", "name": "k", "duration_us": -2})",
       "4: kernel: field 'duration_us' must be a non-negative number of microseconds"},
      {"StringDuration", R"({"rank": 0, "op": "host", "duration_us": "5us"})",
       "4: host: field 'duration_us' must be a non-negative number of microseconds"},
      {"MemcpyWithoutBytes", R"({"rank": 0, "op": "memcpy", "kind": "h2d"})",
       "4: memcpy: missing field 'bytes'"},
      {"NegativeBytes", R"({"rank": 0, "op": "malloc", "bytes": -4})",
       "4: malloc: field 'bytes' must be a non-negative integer"},
      {"FractionalBytes", R"({"rank": 0, "op": "free", "bytes": 2.5})",
       "4: free: field 'bytes' must be a non-negative integer"},
      {"BadCopyKind", R"({"rank": 0, "op": "memcpy", "bytes": 4, "kind": "x2y"})",
       R"(4: memcpy: field 'kind' must be one of h2d, d2h, d2d, peer (found "x2y"))"},
      {"AsyncNotBool", R"({"rank": 0, "op": "memset", "bytes": 4, "async": 1})",
       "4: memset: field 'async' must be true or false"},
      {"EventMissing", R"({"rank": 0, "op": "event_record"})",
       "4: event_record: missing field 'event'"},
      {"StreamCreateDefaultStream", R"({"rank": 0, "op": "stream_create", "stream": 0})",
       "4: stream_create: field 'stream' must be the new stream's id, an integer > 0"},
      {"BadStream", R"({"rank": 0, "op": "stream_sync", "stream": "main"})",
       R"(4: stream_sync: field 'stream' must be a stream id (an integer >= 0) or "per_thread")"},
      {"BadGrid", R"({"rank": 0, "op": "kernel", "name": "k", "grid": [1, 0, 1]})",
       "4: kernel: field 'grid' must be a positive integer or an array [x, y, z] of positive "
       "integers"},
      // Version 2's fields in a version-1 trace (the header above says 1).
      {"AttentionKernelInVersion1",
       R"({"rank": 0, "op": "kernel", "name": "k", "attention": {"batch": 1, "heads": 1, "seq_q": 8, "seq_kv": 8, "head_dim": 64, "kernel": "fa3"}})",
       "4: kernel: attention: field 'kernel' needs trace format version 2 (the header says 1)"},
      {"BytesGuessedInVersion1",
       R"({"rank": 0, "op": "kernel", "name": "k", "bytes": 8, "bytes_guessed": true})",
       "4: kernel: field 'bytes_guessed' needs trace format version 2 (the header says 1)"},
      {"GemmMissingK", R"({"rank": 0, "op": "kernel", "name": "k", "gemm": {"m": 1, "n": 2}})",
       "4: kernel: gemm: missing field 'k'"},
      {"GemmUnknownField",
       R"({"rank": 0, "op": "kernel", "name": "k", "gemm": {"m": 1, "n": 2, "k": 3, "bach": 2}})",
       "4: kernel: gemm: unknown field 'bach' (did you mean 'batch'?)"},
      {"NotAMember",
       R"({"rank": 5, "op": "collective", "comm": "tp0",)"
       R"( "coll": "allreduce", "count": 1, "dtype": "float32"})",
       "4: collective: rank 5 is not a member of communicator 'tp0'"},
      {"UnknownCollective",
       R"({"rank": 0, "op": "collective", "comm": "tp0",)"
       R"( "coll": "allsum", "count": 1, "dtype": "float32"})",
       "4: collective: unknown collective 'allsum' (known: allreduce, allgather, reducescatter, "
       "broadcast, reduce, alltoall, gather, scatter)"},
      {"SendRecvCollective",
       R"({"rank": 0, "op": "collective", "comm": "tp0",)"
       R"( "coll": "sendrecv", "count": 1, "dtype": "float32"})",
       "4: collective: coll 'sendrecv' is not a collective here: write point-to-point traffic as "
       "send and recv ops"},
      {"UnknownDataType",
       R"({"rank": 0, "op": "collective", "comm": "tp0",)"
       R"( "coll": "allreduce", "count": 1, "dtype": "float128"})",
       "4: collective: unknown data type 'float128' (known: int8, uint8, int32, uint32, int64, "
       "uint64, float16, float32, float64, bfloat16, f8e4m3, f8e5m2, tf32)"},
      {"Tf32IsNotACollectivesType",
       R"({"rank": 0, "op": "collective", "comm": "tp0",)"
       R"( "coll": "allreduce", "count": 1, "dtype": "tf32"})",
       "4: collective: data type 'tf32' is a GEMM's math (a kernel's gemm.dtype) only"},
      {"MissingCount",
       R"({"rank": 0, "op": "collective", "comm": "tp0", "coll": "allreduce", "dtype": "float32"})",
       "4: collective: missing field 'count'"},
      {"RootMissing",
       R"({"rank": 0, "op": "collective", "comm": "tp0",)"
       R"( "coll": "broadcast", "count": 1, "dtype": "float32"})",
       "4: collective: missing field 'root'"},
      {"RootOutsideCommunicator",
       R"({"rank": 0, "op": "collective", "comm": "tp0",)"
       R"( "coll": "gather", "count": 1, "dtype": "float32", "root": 2})",
       "4: collective: root 2 is outside communicator 'tp0' (2 ranks)"},
      {"RootOnUnrootedCollective",
       R"({"rank": 0, "op": "collective", "comm": "tp0",)"
       R"( "coll": "allreduce", "count": 1, "dtype": "float32", "root": 0})",
       "4: collective: field 'root' does not apply to allreduce (only to broadcast, reduce, "
       "gather, scatter)"},
      {"RedopOnAllGather",
       R"({"rank": 0, "op": "collective", "comm": "tp0",)"
       R"( "coll": "allgather", "count": 1, "dtype": "float32", "redop": "max"})",
       "4: collective: field 'redop' does not apply to allgather (only to allreduce, reduce, "
       "reducescatter)"},
      {"BadRedop",
       R"({"rank": 0, "op": "collective", "comm": "tp0",)"
       R"( "coll": "allreduce", "count": 1, "dtype": "float32", "redop": "xor"})",
       R"(4: collective: field 'redop' must be one of sum, prod, max, min, avg (found "xor"))"},
      {"PeerOutsideCommunicator",
       R"({"rank": 8, "op": "send", "comm": "dp0", "peer": 2, "count": 1, "dtype": "int8"})",
       "4: send: peer 2 is outside communicator 'dp0' (2 ranks)"},
      {"RecvMissingPeer",
       R"({"rank": 8, "op": "recv", "comm": "dp0", "count": 1, "dtype": "int8"})",
       "4: recv: missing field 'peer'"},
      {"EmptyLabel", R"({"rank": 0, "op": "marker", "label": ""})",
       "4: marker: field 'label' must be a non-empty string"},
      {"CommRedeclared", R"({"op": "comm", "comm": "tp0", "ranks": [2, 3]})",
       "4: communicator 'tp0' is already declared at line 2"},
      {"CommRankTwice", R"({"op": "comm", "comm": "tp1", "ranks": [2, 3, 2]})",
       "4: communicator 'tp1': rank 2 is listed twice"},
      {"CommRankOutsideWorld", R"({"op": "comm", "comm": "tp1", "ranks": [2, 40]})",
       "4: communicator 'tp1': rank 40 is outside the trace's 16 ranks"},
      {"CommNoRanks", R"({"op": "comm", "comm": "tp1", "ranks": []})",
       "4: comm: field 'ranks' must be a non-empty array of ranks"},
      {"CommRankMisspelt", R"({"op": "comm", "comm": "tp1", "rank": [2]})",
       "4: comm: unknown field 'rank' (did you mean 'ranks'?)"},
      {"CommUsedBeforeDeclared",
       "{\"rank\": 2, \"op\": \"send\", \"comm\": \"tp1\", \"peer\": 1, \"count\": 1, \"dtype\": "
       "\"int8\"}\n{\"op\": \"comm\", \"comm\": \"tp1\", \"ranks\": [2, 3]}",
       R"(4: unknown communicator 'tp1' (declare it with {"op":"comm",...} first))"},
      {"ErrorLineCountsComments",
       "# a comment\n\n{\"rank\": 0, \"op\": \"device_sync\"}\n{\"rank\": 0, \"op\": \"kernel\"}",
       "7: kernel: missing field 'name'"},
  };
}

class BadTraceTest : public ::testing::TestWithParam<BadTrace> {};

TEST_P(BadTraceTest, FailsWithOneLineNamingFileAndLine) {
  ScratchDir scratch;
  const std::string path = scratch.File("run.jsonl");
  WriteText(path, kHeader + GetParam().body + "\n");
  Result<std::unique_ptr<Workload>> trace = OpenTrace(path);
  ASSERT_FALSE(trace.ok()) << "opened a bad trace";
  EXPECT_EQ(trace.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(trace.status().message(), path + ":" + GetParam().error);
  EXPECT_EQ(trace.status().message().find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Errors, BadTraceTest, ::testing::ValuesIn(BadTraces()),
                         [](const auto& test) { return test.param.name; });

// Errors about the header itself (no header prepended).
struct BadHeader {
  std::string name;
  std::string text;
  std::string error;  // after "PATH"
};
void PrintTo(const BadHeader& header, std::ostream* os) { *os << header.name; }

class BadHeaderTest : public ::testing::TestWithParam<BadHeader> {};

TEST_P(BadHeaderTest, FailsWithOneLine) {
  ScratchDir scratch;
  const std::string path = scratch.File("run.jsonl");
  WriteText(path, GetParam().text);
  Result<std::unique_ptr<Workload>> trace = OpenTrace(path);
  ASSERT_FALSE(trace.ok()) << "opened a bad trace";
  EXPECT_EQ(trace.status().message(), path + GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Errors, BadHeaderTest,
    ::testing::Values(
        BadHeader{"NoHeader", "# ops only\n{\"rank\": 0, \"op\": \"device_sync\"}\n",
                  R"(:2: missing header: the first line must be {"myriad_trace": 2, "ranks": N})"},
        BadHeader{"Empty", "",
                  R"(: empty trace: expected the header line {"myriad_trace": 2, "ranks": N})"},
        BadHeader{"OnlyComments", "# nothing\n\n",
                  R"(: empty trace: expected the header line {"myriad_trace": 2, "ranks": N})"},
        BadHeader{"FutureVersion", "{\"myriad_trace\": 3, \"ranks\": 4}\n",
                  ":1: unsupported trace format version 3 (this Myriad reads versions 1 to 2)"},
        BadHeader{"VersionNotANumber", "{\"myriad_trace\": \"1\", \"ranks\": 4}\n",
                  ":1: header: field 'myriad_trace' must be the format version, a positive "
                  "integer"},
        BadHeader{"NoRanks", "{\"myriad_trace\": 1}\n", ":1: header: missing field 'ranks'"},
        BadHeader{"ZeroRanks", "{\"myriad_trace\": 1, \"ranks\": 0}\n",
                  ":1: header: field 'ranks' must be an integer from 1 to 1048576"},
        BadHeader{"UnknownHeaderField", "{\"myriad_trace\": 1, \"ranks\": 4, \"gpus\": 4}\n",
                  ":1: header: unknown field 'gpus'"}),
    [](const auto& test) { return test.param.name; });

}  // namespace
}  // namespace myriad::emulator
