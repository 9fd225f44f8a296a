// Myriad's NCCL (interpose/nccl/nccl.cc), compiled into this test and linked against a fake
// CUDA runtime: cudaGetExportTable hands out a ClientTable that records the ops the NCCL code
// submits, so the tests check what would reach Myriad without a `myriad` process. The last test
// loads the built libnccl.so.2 and checks that ncclX and pncclX are the same implementation.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "common/client_api.h"
#include "protocol/wire.h"

namespace {

using myriad::shim::ClientTable;
using myriad::wire::Reply;
using myriad::wire::WireOp;

// What the NCCL code sent: each op, its device, and whether it waited for an answer.
struct Sent {
  WireOp op;
  int device;
  bool call;
};

struct Fake {
  std::vector<Sent> sent;
  std::map<std::string, std::uint32_t> ids;
  std::vector<std::string> names{""};
  int device = 0;
  Reply reply;  // what `call` answers
  int mallocs = 0;
  int frees = 0;
};
Fake g_fake;

int FakeSubmit(const WireOp* op, int device) {
  g_fake.sent.push_back({*op, device, false});
  return 0;
}
int FakeCall(const WireOp* op, int device, Reply* reply) {
  g_fake.sent.push_back({*op, device, true});
  *reply = g_fake.reply;
  return 0;
}
std::uint32_t FakeIntern(const char* name) {
  auto [it, added] = g_fake.ids.emplace(name, static_cast<std::uint32_t>(g_fake.names.size()));
  if (added) g_fake.names.push_back(name);
  return it->second;
}
int FakeCurrentDevice() { return g_fake.device; }
// Stream handles in these tests are small integers cast to cudaStream_t.
int FakeStreamId(cudaStream_t stream) {
  return static_cast<int>(reinterpret_cast<std::intptr_t>(stream));
}
std::int64_t FakeThreadTime() { return 0; }
int flushes = 0;
void FakeFlush() { ++flushes; }

// The entries the NCCL shim calls; the rest (host threads, the driver's) stay null.
const ClientTable kTable = [] {
  ClientTable t{};
  t.version = 2;
  t.submit = FakeSubmit;
  t.call = FakeCall;
  t.intern = FakeIntern;
  t.current_device = FakeCurrentDevice;
  t.stream_id = FakeStreamId;
  t.thread_time = FakeThreadTime;
  t.process = 3;
  t.devices = 8;
  t.flush = FakeFlush;
  return t;
}();

cudaStream_t Stream(int id) {
  return reinterpret_cast<cudaStream_t>(static_cast<std::intptr_t>(id));
}

const std::string& NameOf(std::uint32_t id) { return g_fake.names.at(id); }

}  // namespace

// The fake CUDA runtime: what nccl.cc uses of it.
extern "C" cudaError_t cudaGetExportTable(const void** table, const cudaUUID_t* id) {
  if (std::memcmp(id, &myriad::shim::kClientTableId, sizeof *id) != 0) return cudaErrorInvalidValue;
  *table = &kTable;
  return cudaSuccess;
}
extern "C" cudaError_t cudaMalloc(void** ptr, size_t size) {
  ++g_fake.mallocs;
  *ptr = std::malloc(size == 0 ? 1 : size);
  return cudaSuccess;
}
extern "C" cudaError_t cudaFree(void* ptr) {
  ++g_fake.frees;
  std::free(ptr);
  return cudaSuccess;
}

namespace {

class Nccl : public ::testing::Test {
 protected:
  void SetUp() override {
    g_fake.sent.clear();
    g_fake.device = 0;
    g_fake.reply = Reply();
  }
  // Two ranks on devices 0 and 1 of this process, made by ncclCommInitAll.
  void MakeTwo(ncclComm_t comms[2]) {
    ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
    g_fake.sent.clear();
  }
};

TEST_F(Nccl, VersionAndErrorStrings) {
  int version = 0;
  EXPECT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
  EXPECT_STREQ(ncclGetErrorString(ncclSuccess), "no error");
  EXPECT_STREQ(ncclGetErrorString(ncclInvalidUsage),
               "invalid usage (run with NCCL_DEBUG=WARN for details)");
  EXPECT_STREQ(ncclGetErrorString(static_cast<ncclResult_t>(42)), "unknown result code");
}

TEST_F(Nccl, UniqueIdsDifferAndEncodeTheProcess) {
  ncclUniqueId a, b;
  ASSERT_EQ(ncclGetUniqueId(&a), ncclSuccess);
  ASSERT_EQ(ncclGetUniqueId(&b), ncclSuccess);
  EXPECT_NE(std::memcmp(a.internal, b.internal, 16), 0);
  const unsigned char process[4] = {0, 0, 0, 3};  // big-endian, after "MYRD"
  EXPECT_EQ(std::memcmp(a.internal, "MYRD", 4), 0);
  EXPECT_EQ(std::memcmp(a.internal + 4, process, 4), 0);
  EXPECT_EQ(std::memcmp(b.internal + 4, process, 4), 0);
  EXPECT_TRUE(g_fake.sent.empty());
}

TEST_F(Nccl, InitRankOutsideAGroupWaitsForMyriad) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  g_fake.device = 5;
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 4, id, 2), ncclSuccess);
  ASSERT_EQ(g_fake.sent.size(), 1u);
  const Sent& s = g_fake.sent[0];
  EXPECT_TRUE(s.call);
  EXPECT_EQ(s.device, 5);
  EXPECT_EQ(s.op.kind, 100);
  EXPECT_TRUE(s.op.flags & myriad::wire::kWantsReply);
  EXPECT_EQ(s.op.peer, 2);
  EXPECT_EQ(s.op.count, 4u);
  char hex[33];
  for (int i = 0; i < 16; ++i)
    std::snprintf(hex + 2 * i, 3, "%02x", static_cast<unsigned char>(id.internal[i]));
  EXPECT_EQ(NameOf(s.op.comm), std::string("nccl-") + hex);
  int n = 0, rank = 0, dev = 0;
  EXPECT_EQ(ncclCommCount(comm, &n), ncclSuccess);
  EXPECT_EQ(ncclCommUserRank(comm, &rank), ncclSuccess);
  EXPECT_EQ(ncclCommCuDevice(comm, &dev), ncclSuccess);
  EXPECT_EQ(n, 4);
  EXPECT_EQ(rank, 2);
  EXPECT_EQ(dev, 5);
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  EXPECT_EQ(ncclCommFinalize(comm), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_EQ(g_fake.sent.back().op.kind, 103);  // kCommDestroy
}

TEST_F(Nccl, InitRankInsideAGroupDoesNotWait) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comms[2] = {};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < 2; ++i) {
    g_fake.device = 6 + i;
    ASSERT_EQ(ncclCommInitRank(&comms[i], 2, id, i), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  // Both joins are sent without waiting; then ncclGroupEnd waits on each device (a zero-length
  // host op answered after that device's join), as NCCL returns once the communicators exist.
  ASSERT_EQ(g_fake.sent.size(), 4u);
  for (int i = 0; i < 2; ++i) {
    const Sent& s = g_fake.sent[static_cast<size_t>(i)];
    EXPECT_FALSE(s.call);
    EXPECT_FALSE(s.op.flags & myriad::wire::kWantsReply);
    EXPECT_EQ(s.device, 6 + i);
    EXPECT_EQ(s.op.kind, 100);
    EXPECT_EQ(s.op.peer, i);
    EXPECT_EQ(s.op.comm, g_fake.sent[0].op.comm);
    const Sent& wait = g_fake.sent[static_cast<size_t>(2 + i)];
    EXPECT_TRUE(wait.call);
    EXPECT_EQ(wait.device, 6 + i);
    EXPECT_EQ(wait.op.kind, 17);  // host, zero length
    EXPECT_EQ(wait.op.duration_ps, 0);
  }
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST_F(Nccl, InitAllJoinsEachListedDevice) {
  ncclComm_t comms[2] = {};
  const int devlist[2] = {2, 5};
  ASSERT_EQ(ncclCommInitAll(comms, 2, devlist), ncclSuccess);
  ASSERT_EQ(g_fake.sent.size(), 4u);  // two joins, then a wait on each device
  for (int i = 0; i < 2; ++i) {
    const Sent& s = g_fake.sent[static_cast<size_t>(i)];
    EXPECT_FALSE(s.call);
    EXPECT_EQ(s.device, devlist[i]);
    EXPECT_EQ(s.op.peer, i);
    EXPECT_EQ(s.op.count, 2u);
    int dev = -1;
    EXPECT_EQ(ncclCommCuDevice(comms[i], &dev), ncclSuccess);
    EXPECT_EQ(dev, devlist[i]);
  }
  EXPECT_EQ(NameOf(g_fake.sent[0].op.comm), NameOf(g_fake.sent[1].op.comm));
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);

  const int dup[2] = {1, 1};
  EXPECT_EQ(ncclCommInitAll(comms, 2, dup), ncclInvalidUsage);
  const int bad[1] = {8};
  EXPECT_EQ(ncclCommInitAll(comms, 1, bad), ncclInvalidArgument);
}

TEST_F(Nccl, GroupedAllReduceOverTwoDevicesIsOneGroupPerDevice) {
  ncclComm_t comms[2];
  MakeTwo(comms);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(ncclAllReduce(nullptr, nullptr, 1000, ncclBfloat16, ncclAvg, comms[i], Stream(7 + i)),
              ncclSuccess);
  EXPECT_TRUE(g_fake.sent.empty()) << "nothing leaves before ncclGroupEnd";
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  ASSERT_EQ(g_fake.sent.size(), 6u);
  const std::uint8_t kinds[3] = {15, 12, 16};
  for (size_t i = 0; i < 6; ++i) {
    const Sent& s = g_fake.sent[i];
    const int dev = static_cast<int>(i / 3);
    EXPECT_EQ(s.device, dev) << i;
    EXPECT_EQ(s.op.kind, kinds[i % 3]) << i;
    EXPECT_EQ(s.op.stream, 7 + dev) << i;
    EXPECT_FALSE(s.call);
  }
  const WireOp& ar = g_fake.sent[1].op;
  EXPECT_EQ(ar.coll, 0);   // allreduce
  EXPECT_EQ(ar.dtype, 9);  // bfloat16
  EXPECT_EQ(ar.redop, 4);  // avg
  EXPECT_EQ(ar.count, 1000u);
  EXPECT_EQ(ar.root, -1);
  EXPECT_EQ(NameOf(ar.comm).rfind("nccl-", 0), 0u);
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST_F(Nccl, NestedGroupsLaunchAtTheOutermostEnd) {
  ncclComm_t comms[2];
  MakeTwo(comms);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclSend(nullptr, 8, ncclFloat, 1, comms[0], Stream(0)), ncclSuccess);
  ASSERT_EQ(ncclRecv(nullptr, 8, ncclFloat, 0, comms[1], Stream(0)), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_TRUE(g_fake.sent.empty());
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  ASSERT_EQ(g_fake.sent.size(), 6u);
  EXPECT_EQ(g_fake.sent[1].op.kind, 13);  // send
  EXPECT_EQ(g_fake.sent[1].op.peer, 1);
  EXPECT_EQ(g_fake.sent[1].op.coll, 6);   // sendrecv
  EXPECT_EQ(g_fake.sent[4].op.kind, 14);  // recv
  EXPECT_EQ(g_fake.sent[4].op.peer, 0);
  EXPECT_EQ(g_fake.sent[4].device, 1);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("not in a group call"), std::string::npos);
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST_F(Nccl, CollectivesMapCountTypeOpAndRoot) {
  ncclComm_t comms[2];
  MakeTwo(comms);
  ncclComm_t c = comms[1];
  int x = 0;
  void* b = &x;
  ASSERT_EQ(ncclBroadcast(b, b, 10, ncclInt8, 1, c, Stream(3)), ncclSuccess);
  ASSERT_EQ(ncclBcast(b, 11, ncclUint8, 0, c, Stream(3)), ncclSuccess);
  ASSERT_EQ(ncclReduce(b, b, 12, ncclFloat64, ncclMax, 1, c, Stream(3)), ncclSuccess);
  ASSERT_EQ(ncclAllGather(b, b, 13, ncclInt64, c, Stream(3)), ncclSuccess);
  ASSERT_EQ(ncclReduceScatter(b, b, 14, ncclFloat16, ncclMin, c, Stream(3)), ncclSuccess);
  ASSERT_EQ(ncclAlltoAll(b, b, 15, ncclFloat8e5m2, c, Stream(3)), ncclSuccess);
  ASSERT_EQ(ncclGather(b, b, 16, ncclUint32, 1, c, Stream(3)), ncclSuccess);
  ASSERT_EQ(ncclScatter(b, b, 17, ncclInt32, 0, c, Stream(3)), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(b, b, 0, ncclFloat, ncclSum, c, Stream(3)), ncclSuccess);  // empty
  struct Want {
    int coll, count, dtype, redop, root;
  };
  const Want want[] = {{3, 10, 0, 0, 1},  {3, 11, 1, 0, 0},   {4, 12, 8, 2, 1}, {1, 13, 4, 0, -1},
                       {2, 14, 6, 3, -1}, {5, 15, 11, 0, -1}, {7, 16, 3, 0, 1}, {8, 17, 2, 0, 0}};
  ASSERT_EQ(g_fake.sent.size(), std::size(want)) << "an empty collective sends nothing";
  for (size_t i = 0; i < std::size(want); ++i) {
    const Sent& s = g_fake.sent[i];
    EXPECT_EQ(s.device, 1) << i;
    EXPECT_FALSE(s.call) << i;
    EXPECT_EQ(s.op.kind, 12) << i;
    EXPECT_EQ(s.op.stream, 3) << i;
    EXPECT_EQ(s.op.coll, want[i].coll) << i;
    EXPECT_EQ(s.op.count, static_cast<std::uint64_t>(want[i].count)) << i;
    EXPECT_EQ(s.op.dtype, want[i].dtype) << i;
    EXPECT_EQ(s.op.redop, want[i].redop) << i;
    EXPECT_EQ(s.op.root, want[i].root) << i;
    EXPECT_EQ(s.op.peer, -1) << i;
  }

  // A PreMulSum is timed as a sum; once destroyed it is rejected.
  ncclRedOp_t op;
  float scalar = 0.5f;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, c),
            ncclSuccess);
  EXPECT_GE(static_cast<int>(op), static_cast<int>(ncclNumOps));
  g_fake.sent.clear();
  ASSERT_EQ(ncclAllReduce(b, b, 4, ncclFloat, op, c, Stream(3)), ncclSuccess);
  ASSERT_EQ(g_fake.sent.size(), 1u);
  EXPECT_EQ(g_fake.sent[0].op.redop, 0);
  EXPECT_EQ(ncclAllReduce(b, b, 4, ncclFloat, op, comms[0], Stream(3)), ncclInvalidArgument)
      << "user ops belong to their communicator";
  EXPECT_EQ(ncclRedOpDestroy(op, c), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(b, b, 4, ncclFloat, op, c, Stream(3)), ncclInvalidArgument);
  EXPECT_EQ(ncclRedOpDestroy(ncclSum, c), ncclInvalidArgument);
  for (ncclComm_t cc : comms) EXPECT_EQ(ncclCommDestroy(cc), ncclSuccess);
}

TEST_F(Nccl, ArgumentErrorsReturnNcclCodesAndSetTheLastError) {
  ncclComm_t comms[2];
  MakeTwo(comms);
  ncclComm_t c = comms[0];
  auto last = [] { return std::string(ncclGetLastError(nullptr)); };
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 1, ncclFloat, ncclSum, nullptr, Stream(0)),
            ncclInvalidArgument);
  EXPECT_EQ(last(), "ncclAllReduce : comm argument is NULL");
  EXPECT_EQ(
      ncclAllReduce(nullptr, nullptr, 1, static_cast<ncclDataType_t>(12), ncclSum, c, Stream(0)),
      ncclInvalidArgument);
  EXPECT_EQ(last(), "ncclAllReduce : invalid type 12");
  EXPECT_EQ(
      ncclReduce(nullptr, nullptr, 1, ncclFloat, static_cast<ncclRedOp_t>(9), 0, c, Stream(0)),
      ncclInvalidArgument);
  EXPECT_EQ(last(), "ncclReduce : invalid reduction operation 9");
  EXPECT_EQ(ncclBroadcast(nullptr, nullptr, 1, ncclFloat, 2, c, Stream(0)), ncclInvalidArgument);
  EXPECT_EQ(last(), "ncclBroadcast : invalid root 2 (root should be in the 0..1 range)");
  EXPECT_EQ(ncclSend(nullptr, 1, ncclFloat, -1, c, Stream(0)), ncclInvalidArgument);
  EXPECT_NE(last().find("invalid peer -1"), std::string::npos);
  EXPECT_EQ(ncclCommCount(nullptr, nullptr), ncclInvalidArgument);
  ncclUniqueId id{};
  ncclComm_t bad = nullptr;
  EXPECT_EQ(ncclCommInitRank(&bad, 2, id, 2), ncclInvalidArgument);
  EXPECT_EQ(last(), "ncclCommInitRank : invalid rank requested : 2/2");
  ncclConfig_t config{};  // not from NCCL_CONFIG_INITIALIZER
  EXPECT_EQ(ncclCommInitRankConfig(&bad, 2, id, 0, &config), ncclInvalidArgument);
  EXPECT_EQ(ncclGetVersion(nullptr), ncclInvalidArgument);
  EXPECT_TRUE(g_fake.sent.empty()) << "a rejected call sends nothing";

  // In a group, a failed call fails ncclGroupEnd and nothing of the group is launched.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 1, ncclFloat, ncclSum, c, Stream(0)), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 1, ncclFloat, ncclSum, nullptr, Stream(0)),
            ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  EXPECT_TRUE(g_fake.sent.empty());

  // Myriad runs a group on one stream per device.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 1, ncclFloat, ncclSum, c, Stream(1)), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 1, ncclFloat, ncclSum, c, Stream(2)), ncclInvalidUsage);
  EXPECT_NE(last().find("two streams"), std::string::npos) << last();
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_TRUE(g_fake.sent.empty());

  EXPECT_EQ(ncclCommFinalize(c), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 1, ncclFloat, ncclSum, c, Stream(0)), ncclInvalidUsage);
  for (ncclComm_t cc : comms) EXPECT_EQ(ncclCommDestroy(cc), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(nullptr), ncclSuccess);
}

TEST_F(Nccl, NonBlockingInitReturnsInProgressThenSuccess) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 2, id, 1, &config), ncclInProgress);
  ASSERT_NE(comm, nullptr);
  ASSERT_EQ(g_fake.sent.size(), 1u);
  EXPECT_FALSE(g_fake.sent[0].call);
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(Nccl, SplitAsksMyriadForTheChildsRankAndSize) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  g_fake.device = 4;
  ncclComm_t parent = nullptr;
  ASSERT_EQ(ncclCommInitRank(&parent, 8, id, 5), ncclSuccess);
  const std::string parent_name = NameOf(g_fake.sent[0].op.comm);
  g_fake.sent.clear();
  g_fake.device = 0;  // the split runs on the parent's device, not the current one

  g_fake.reply.value = (std::int64_t{1} << 32) | 4;  // rank 1 of 4
  ncclComm_t child = nullptr;
  ASSERT_EQ(ncclCommSplit(parent, 7, 3, &child, nullptr), ncclSuccess);
  ASSERT_EQ(g_fake.sent.size(), 1u);
  const Sent& s = g_fake.sent[0];
  EXPECT_TRUE(s.call);
  EXPECT_EQ(s.device, 4);
  EXPECT_EQ(s.op.kind, 100);
  EXPECT_EQ(NameOf(s.op.comm), parent_name + "/split0");
  EXPECT_EQ(s.op.peer, 5);
  EXPECT_EQ(s.op.count, 8u);
  EXPECT_EQ(s.op.root, 7);   // color
  EXPECT_EQ(s.op.event, 3);  // key
  int n = 0, rank = 0, dev = 0;
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(ncclCommCount(child, &n), ncclSuccess);
  EXPECT_EQ(ncclCommUserRank(child, &rank), ncclSuccess);
  EXPECT_EQ(ncclCommCuDevice(child, &dev), ncclSuccess);
  EXPECT_EQ(n, 4);
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(dev, 4);
  g_fake.sent.clear();
  ASSERT_EQ(ncclAllReduce(nullptr, nullptr, 1, ncclFloat, ncclSum, child, Stream(0)), ncclSuccess);
  EXPECT_EQ(NameOf(g_fake.sent.at(0).op.comm), parent_name + "/split0/color7");

  // NCCL_SPLIT_NOCOLOR takes part and gets no communicator.
  g_fake.sent.clear();
  g_fake.reply.value = 0;
  ncclComm_t none = parent;
  ASSERT_EQ(ncclCommSplit(parent, NCCL_SPLIT_NOCOLOR, 0, &none, nullptr), ncclSuccess);
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(NameOf(g_fake.sent.at(0).op.comm), parent_name + "/split1");
  EXPECT_EQ(g_fake.sent.at(0).op.root, -1);

  // An engine that does not answer the split is an error, not a broken communicator.
  EXPECT_EQ(ncclCommSplit(parent, 0, 0, &none, nullptr), ncclInternalError);
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(ncclCommSplit(parent, -5, 0, &none, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommDestroy(child), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(parent), ncclSuccess);
}

TEST_F(Nccl, MemAllocUsesTheCudaRuntime) {
  void* p = nullptr;
  const int before = g_fake.mallocs;
  ASSERT_EQ(ncclMemAlloc(&p, 256), ncclSuccess);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(g_fake.mallocs, before + 1);
  EXPECT_EQ(ncclMemFree(p), ncclSuccess);
  EXPECT_EQ(ncclMemAlloc(nullptr, 1), ncclInvalidArgument);
}

TEST_F(Nccl, DebugInfoPrintsNcclShapedLines) {
  ::setenv("NCCL_DEBUG", "INFO", 1);
  ::setenv("NCCL_DEBUG_SUBSYS", "INIT,COLL", 1);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit();
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  g_fake.device = 2;
  ::testing::internal::CaptureStdout();
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 2, id, 1), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(nullptr, nullptr, 64, ncclFloat, ncclSum, comm, Stream(0)), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  const std::string out = ::testing::internal::GetCapturedStdout();
  ::unsetenv("NCCL_DEBUG");
  ::unsetenv("NCCL_DEBUG_SUBSYS");
  ncclResetDebugInit();
#pragma GCC diagnostic pop
  EXPECT_NE(out.find("] NCCL INFO NCCL version 2.28.9+cuda13.0 (Myriad)\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find(" [2] NCCL INFO ncclCommInitRank comm 0x"), std::string::npos) << out;
  EXPECT_NE(out.find(" rank 1 nranks 2 cudaDev 2 nvmlDev 2 busId 0 commId 0x"), std::string::npos)
      << out;
  EXPECT_NE(out.find(" - Init COMPLETE\n"), std::string::npos) << out;
  EXPECT_NE(out.find("NCCL INFO AllReduce: opCount 0 sendbuff (nil) recvbuff (nil) count 64 "
                     "datatype 7 op 0 root 0 comm 0x"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(" [nranks=2] stream (nil)\n"), std::string::npos) << out;
}

// The built library exports every implemented function twice, as one function.
TEST(NcclShimLibrary, NcclAndPncclNamesAreTheSameImplementation) {
  void* h =
      ::dlopen((std::string(MYRIAD_SHIM_DIR) + "/libnccl.so.2").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << ::dlerror();
  const char* names[] = {"ncclGetVersion",
                         "ncclGetErrorString",
                         "ncclGetLastError",
                         "ncclGetUniqueId",
                         "ncclCommInitRank",
                         "ncclCommInitRankConfig",
                         "ncclCommInitRankScalable",
                         "ncclCommInitAll",
                         "ncclCommSplit",
                         "ncclCommFinalize",
                         "ncclCommDestroy",
                         "ncclCommAbort",
                         "ncclCommCount",
                         "ncclCommCuDevice",
                         "ncclCommUserRank",
                         "ncclCommGetAsyncError",
                         "ncclCommRegister",
                         "ncclCommDeregister",
                         "ncclCommWindowRegister",
                         "ncclCommWindowDeregister",
                         "ncclMemAlloc",
                         "ncclMemFree",
                         "ncclRedOpCreatePreMulSum",
                         "ncclRedOpDestroy",
                         "ncclAllReduce",
                         "ncclBroadcast",
                         "ncclBcast",
                         "ncclReduce",
                         "ncclAllGather",
                         "ncclReduceScatter",
                         "ncclAlltoAll",
                         "ncclGather",
                         "ncclScatter",
                         "ncclSend",
                         "ncclRecv",
                         "ncclGroupStart",
                         "ncclGroupEnd",
                         "ncclGroupSimulateEnd",
                         "ncclResetDebugInit"};
  for (const char* name : names) {
    void* f = ::dlsym(h, name);
    void* p = ::dlsym(h, (std::string("p") + name).c_str());
    EXPECT_NE(f, nullptr) << name;
    EXPECT_NE(p, nullptr) << "p" << name;
    EXPECT_EQ(f, p) << name << " and p" << name << " differ: one is still a stub";
  }
  // The library's own ncclGetVersion answers (a stub would return ncclInvalidUsage).
  using GetVersion = ncclResult_t (*)(int*);
  GetVersion get_version = nullptr;
  void* sym = ::dlsym(h, "pncclGetVersion");
  static_assert(sizeof get_version == sizeof sym);
  std::memcpy(&get_version, &sym, sizeof sym);
  int version = 0;
  ASSERT_NE(get_version, nullptr);
  EXPECT_EQ(get_version(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
}

}  // namespace
