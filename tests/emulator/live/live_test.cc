// The live server with processes played by threads speaking the wire protocol.
#include "myriad/emulator/live.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "myriad/emulator/engine.h"
#include "protocol/client.h"
#include "tests/netmodel/test_clusters.h"

namespace myriad::emulator {
namespace {

using ::testing::HasSubstr;
constexpr SimTime kUs = kPicosPerMicro;

wire::WireOp Kernel(std::uint32_t name, double us) {
  wire::WireOp op;
  op.kind = static_cast<std::uint8_t>(OpKind::kKernel);
  op.name = name;
  op.duration_ps = FromMicros(us);
  return op;
}

wire::WireOp Sync(OpKind kind) {
  wire::WireOp op;
  op.kind = static_cast<std::uint8_t>(kind);
  op.flags = wire::kWantsReply;
  return op;
}

EngineOptions Options() {
  EngineOptions o;
  o.launch_latency = 1 * kUs;
  o.overlap = OverlapModel::kOff;
  return o;
}

TEST(LiveServerTest, ProcessesDriveRanksAndGetVirtualTimeBack) {
  LiveOptions options;
  options.placement = {{0, 1}, {1, 1}};  // each process sees its own GPU
  auto workload = LiveWorkload::Start(options);
  ASSERT_TRUE(workload.ok()) << workload.status().message();
  const std::string path = (*workload)->socket_path();
  std::vector<std::int64_t> replies(2, -1);
  std::vector<std::thread> processes;
  for (int p = 0; p < 2; ++p) {
    processes.emplace_back([&, p] {
      wire::Client client;
      ASSERT_TRUE(client.Connect(path));
      ASSERT_TRUE(client.SendHello(p, 1));
      ASSERT_TRUE(client.SendNames({{1, "gemm"}}));
      // Process 1 computes 5 ms of real time first: the engine must wait for it.
      if (p == 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      const wire::WireOp ops[] = {Kernel(1, 100 + 50 * p), Sync(OpKind::kDeviceSync)};
      ASSERT_TRUE(client.SendOps(0, ops, 2));
      wire::Reply reply;
      ASSERT_TRUE(client.ReadReply(reply));
      replies[static_cast<size_t>(p)] = reply.host_time_ps;
      client.Close();  // the process exits
    });
  }
  auto result = RunEngine(**workload, netmodel::testing::DgxCluster("h100-sxm", 1), Options());
  for (auto& t : processes) t.join();
  ASSERT_TRUE(result.ok()) << result.status().message();
  // Kernel [1, 101] on rank 0 and [1, 151] on rank 1; each device sync replies its end.
  EXPECT_EQ(replies[0], 101 * kUs);
  EXPECT_EQ(replies[1], 151 * kUs);
  EXPECT_EQ(result->total_time, 151 * kUs);
}

// A process played by a thread: it sees `visible` devices and runs a 100 us kernel and a
// device sync on `device`, then waits for the answer (or for the reason the run ended).
std::thread KernelThenSync(const std::string& path, int process, int visible, int device) {
  return std::thread([=] {
    wire::Client client;
    ASSERT_TRUE(client.Connect(path));
    ASSERT_TRUE(client.SendHello(process, visible));
    ASSERT_TRUE(client.SendNames({{1, "gemm"}}));
    const wire::WireOp ops[] = {Kernel(1, 100), Sync(OpKind::kDeviceSync)};
    ASSERT_TRUE(client.SendOps(device, ops, 2));
    wire::Reply reply;
    client.ReadReply(reply);
  });
}

// Processes see every GPU of their node, as under torchrun: each uses the one its LOCAL_RANK
// picks, a rank is a GPU some process used, and the GPUs nobody used are left out.
TEST(LiveServerTest, ProcessesPickTheirGpusAmongTheNodes) {
  LiveOptions options;
  options.placement = {{0, 4}, {0, 4}};  // two processes on a node of four GPUs
  auto workload = LiveWorkload::Start(options);
  ASSERT_TRUE(workload.ok());
  std::vector<std::thread> processes;
  for (int p = 0; p < 2; ++p)
    processes.push_back(KernelThenSync((*workload)->socket_path(), p, 4, p + 2));  // devices 2, 3
  auto result = RunEngine(**workload, netmodel::testing::DgxCluster("h100-sxm", 1), Options());
  for (auto& t : processes) t.join();
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ(result->world_size, 2);
  EXPECT_EQ(result->ranks[0].rank, 2);
  EXPECT_EQ(result->ranks[1].rank, 3);
}

// Two processes that pick the same GPU fail the run with both names.
TEST(LiveServerTest, TwoProcessesOnOneGpuFailTheRun) {
  LiveOptions options;
  options.placement = {{0, 2}, {0, 2}};
  auto workload = LiveWorkload::Start(options);
  ASSERT_TRUE(workload.ok());
  std::vector<std::thread> processes;  // one is answered, the other told why the run ends
  for (int p = 0; p < 2; ++p)
    processes.push_back(KernelThenSync((*workload)->socket_path(), p, 2, 1));
  auto result = RunEngine(**workload, netmodel::testing::DgxCluster("h100-sxm", 1), Options());
  (*workload)->Abort("the run failed");  // as `myriad run` does: the waiting process is told
  for (auto& t : processes) t.join();
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(),
              ::testing::MatchesRegex(".*process [01]: sent work for its device 1, GPU 1 of the "
                                      "cluster, which process [01] uses.*"));
}

// The launcher may see a process exit before the I/O thread has read what it sent (or even
// accepted its connection): every op still counts. (Whether the exit overtakes the reads here
// is up to the I/O thread; a delay put into it made the code before this test lose ops.)
TEST(LiveServerTest, AProcessThatExitedStillHasAllItsOpsRun) {
  LiveOptions options;
  auto workload = LiveWorkload::Start(options);
  ASSERT_TRUE(workload.ok());
  constexpr int kKernels = 300;
  std::thread process([path = (*workload)->socket_path()] {
    wire::Client client;
    ASSERT_TRUE(client.Connect(path));
    ASSERT_TRUE(client.SendHello(0, 1));
    ASSERT_TRUE(client.SendNames({{1, "gemm"}}));
    for (int i = 0; i < kKernels; ++i) {
      const wire::WireOp op = Kernel(1, 10);
      ASSERT_TRUE(client.SendOps(0, &op, 1));
    }
    client.Close();
  });
  process.join();
  (*workload)->ProcessExited(0);  // before the engine (or the I/O thread) looked at anything
  auto result = RunEngine(**workload, netmodel::testing::DgxCluster("h100-sxm", 1), Options());
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->simulated_ops, static_cast<std::uint64_t>(kKernels));
  EXPECT_EQ(result->total_time, (1 + 10 * kKernels) * kUs);
}

// Host threads of one process connect on their own; one that waits on another (reported
// blocked) holds nothing, and a sleep is answered when virtual time reaches its deadline.
TEST(LiveServerTest, HostThreadsReportWaitsAndSleeps) {
  LiveOptions options;
  options.placement = {{0, 2}};
  auto workload = LiveWorkload::Start(options);
  ASSERT_TRUE(workload.ok());
  std::int64_t woke_at = -1, synced_at = -1;
  std::thread process([&, path = (*workload)->socket_path()] {
    wire::Client main_thread, worker;
    ASSERT_TRUE(main_thread.Connect(path));
    ASSERT_TRUE(main_thread.SendHello(0, 2));
    // Thread 0 announces thread 1, then waits for it on the host (a join, say).
    wire::ThreadState announce{1, 1, wire::HostState::kRunning, 0, 0};
    ASSERT_TRUE(main_thread.SendThread(announce));
    wire::ThreadState waits{0, 1, wire::HostState::kBlocked, 0, 0};
    ASSERT_TRUE(main_thread.SendThread(waits));
    // Thread 1 runs a kernel on device 1, sleeps 500 us, then synchronises.
    ASSERT_TRUE(worker.Connect(path));
    ASSERT_TRUE(worker.SendHello(0, 2));
    ASSERT_TRUE(worker.SendNames({{1, "gemm"}}));
    const wire::WireOp kernel = Kernel(1, 100);
    ASSERT_TRUE(worker.SendOps(1, &kernel, 1, 1, 0));
    wire::ThreadState sleeps{1, 2, wire::HostState::kSleeping, 0, 500 * kUs};
    ASSERT_TRUE(worker.SendThread(sleeps));
    ASSERT_EQ(worker.ReadTimer(2, /*wait=*/true, &woke_at, nullptr), 1);
    const wire::WireOp sync = Sync(OpKind::kDeviceSync);
    ASSERT_TRUE(worker.SendOps(1, &sync, 1, 1, woke_at));
    wire::Reply reply;
    ASSERT_TRUE(worker.ReadReply(reply));
    synced_at = reply.host_time_ps;
  });
  auto result = RunEngine(**workload, netmodel::testing::DgxCluster("h100-sxm", 1), Options());
  process.join();
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(woke_at, 500 * kUs);     // the sleep's deadline, not sooner, whatever the wall clock
  EXPECT_EQ(synced_at, 500 * kUs);   // the kernel [1, 101] was long done
  EXPECT_EQ(result->world_size, 1);  // GPU 1 only: nothing used GPU 0
}

// A timed wait (a condition or semaphore wait with a deadline) is decided in virtual time: a
// waker whose clock is before the deadline ends it, however long that takes in real time, and
// the woken thread runs from the waker's clock, not from its deadline; a wait nobody ends is
// answered at its deadline.
TEST(LiveServerTest, ATimedWaitIsDecidedInVirtualTime) {
  LiveOptions options;
  auto workload = LiveWorkload::Start(options);
  ASSERT_TRUE(workload.ok());
  std::int64_t stale = -1, woken_sync = -1, second_deadline = -1;
  std::thread process([&, path = (*workload)->socket_path()] {
    wire::Client main_thread, watcher;
    ASSERT_TRUE(main_thread.Connect(path));
    ASSERT_TRUE(main_thread.SendHello(0, 1));
    ASSERT_TRUE(main_thread.SendNames({{1, "gemm"}}));
    ASSERT_TRUE(main_thread.SendThread({1, 1, wire::HostState::kRunning, 0, 0}));  // creates 1
    ASSERT_TRUE(watcher.Connect(path));
    ASSERT_TRUE(watcher.SendHello(0, 1));
    ASSERT_TRUE(watcher.SendNames({{1, "gemm"}}));
    ASSERT_TRUE(watcher.SendThread({1, 2, wire::HostState::kWaitingUntil, 0, 1000 * kUs}));
    const wire::WireOp ops[] = {Kernel(1, 100), Sync(OpKind::kDeviceSync)};
    ASSERT_TRUE(main_thread.SendOps(0, ops, 2, 0, 0));
    wire::Reply reply;
    ASSERT_TRUE(main_thread.ReadReply(reply));
    // The main thread computes on the host for a while (real time), then wakes the watcher.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(main_thread.SendThread({1, 3, wire::HostState::kRunning, 0, reply.host_time_ps}));
    ASSERT_TRUE(main_thread.SendThread({0, 1, wire::HostState::kExited, 0, reply.host_time_ps}));
    watcher.ReadTimer(2, /*wait=*/false, &stale, nullptr);
    const wire::WireOp more[] = {Kernel(1, 100), Sync(OpKind::kDeviceSync)};
    ASSERT_TRUE(watcher.SendOps(0, more, 2, 1, reply.host_time_ps, 3));
    ASSERT_TRUE(watcher.ReadReply(reply));
    woken_sync = reply.host_time_ps;
    // A second timed wait that nobody ends.
    ASSERT_TRUE(watcher.SendThread({1, 4, wire::HostState::kWaitingUntil, 0, 300 * kUs}));
    ASSERT_EQ(watcher.ReadTimer(4, /*wait=*/true, &second_deadline, nullptr), 1);
    ASSERT_TRUE(watcher.SendThread({1, 5, wire::HostState::kExited, 0, second_deadline}));
  });
  auto result = RunEngine(**workload, netmodel::testing::DgxCluster("h100-sxm", 1), Options());
  process.join();
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(stale, -1);              // its deadline never came
  EXPECT_EQ(woken_sync, 202 * kUs);  // from the waker's 101 us: kernel [102, 202]
  EXPECT_EQ(second_deadline, 300 * kUs);
  EXPECT_EQ(result->total_time, 300 * kUs);
}

// A woken thread's batch may reach Myriad before the report of the wake, which its waker sends
// after its own ops over its own connection (PyTorch: the autograd thread launches the backward,
// wakes the main thread, which synchronises). The batch waits for the report, so the waker's
// kernel comes first on the stream and the synchronisation waits for it.
TEST(LiveServerTest, AWokenThreadsBatchWaitsForTheWakersReport) {
  LiveOptions options;
  auto workload = LiveWorkload::Start(options);
  ASSERT_TRUE(workload.ok());
  std::int64_t synced_at = -1;
  std::thread process([&, path = (*workload)->socket_path()] {
    wire::Client waker, woken;
    ASSERT_TRUE(waker.Connect(path));
    ASSERT_TRUE(waker.SendHello(0, 1));
    ASSERT_TRUE(waker.SendNames({{1, "backward"}}));
    ASSERT_TRUE(waker.SendThread({1, 1, wire::HostState::kRunning, 0, 0}));  // creates thread 1
    ASSERT_TRUE(woken.Connect(path));
    ASSERT_TRUE(woken.SendHello(0, 1));
    ASSERT_TRUE(woken.SendThread({1, 2, wire::HostState::kBlocked, 0, 0}));
    // Woken (version 3) before the waker has said so: this batch must wait for the report.
    const wire::WireOp sync = Sync(OpKind::kDeviceSync);
    ASSERT_TRUE(woken.SendOps(0, &sync, 1, 1, 0, 3));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // Myriad reads it first
    const wire::WireOp kernel = Kernel(1, 100);
    ASSERT_TRUE(waker.SendOps(0, &kernel, 1, 0, 0));
    ASSERT_TRUE(waker.SendThread({1, 3, wire::HostState::kRunning, 0, 0}));
    ASSERT_TRUE(waker.SendThread({0, 1, wire::HostState::kExited, 0, 0}));
    wire::Reply reply;
    ASSERT_TRUE(woken.ReadReply(reply));
    synced_at = reply.host_time_ps;
  });
  auto result = RunEngine(**workload, netmodel::testing::DgxCluster("h100-sxm", 1), Options());
  process.join();
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(synced_at, 101 * kUs);  // the kernel [1, 101] came first
}

// A thread that takes a lock another thread let go of may send its batch before that thread's
// batch reaches Myriad (each thread has its own connection). Its order frame holds what follows
// until the other thread's first ops have been taken, so the lock's order is the GPU's: the
// releaser's kernel comes first and the taker's synchronisation waits for it.
TEST(LiveServerTest, ABatchOrderedAfterAnotherThreadsOpsWaitsForThem) {
  LiveOptions options;
  auto workload = LiveWorkload::Start(options);
  ASSERT_TRUE(workload.ok());
  std::int64_t synced_at = -1;
  std::thread process([&, path = (*workload)->socket_path()] {
    wire::Client releaser, taker;
    ASSERT_TRUE(releaser.Connect(path));
    ASSERT_TRUE(releaser.SendHello(0, 1));
    ASSERT_TRUE(releaser.SendNames({{1, "backward"}}));
    ASSERT_TRUE(releaser.SendThread({1, 1, wire::HostState::kRunning, 0, 0}));  // thread 1
    ASSERT_TRUE(taker.Connect(path));
    ASSERT_TRUE(taker.SendHello(0, 1));
    // Thread 1 took what thread 0 let go of after its first op.
    ASSERT_TRUE(taker.SendOrder(1, 0, 1));
    const wire::WireOp sync = Sync(OpKind::kDeviceSync);
    ASSERT_TRUE(taker.SendOps(0, &sync, 1, 1, 0, 0, 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // Myriad reads it first
    const wire::WireOp kernel = Kernel(1, 100);
    ASSERT_TRUE(releaser.SendOps(0, &kernel, 1, 0, 0, 0, 1));
    ASSERT_TRUE(releaser.SendThread({0, 1, wire::HostState::kExited, 0, 0}));
    wire::Reply reply;
    ASSERT_TRUE(taker.ReadReply(reply));
    synced_at = reply.host_time_ps;
    ASSERT_TRUE(taker.SendThread({1, 2, wire::HostState::kExited, 0, 0}));
  });
  auto result = RunEngine(**workload, netmodel::testing::DgxCluster("h100-sxm", 1), Options());
  process.join();
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(synced_at, 101 * kUs);  // the kernel [1, 101] came first
}

// A thread's poll of an event is answered after everything that happens at the poll's time:
// an event recorded after a kernel completes when the kernel does, so a poll at that very time
// finds it complete, however the poll's arrival and the kernel's end fall in real time.
TEST(LiveServerTest, APollAtAnEventsCompletionTimeFindsItComplete) {
  LiveOptions options;
  auto workload = LiveWorkload::Start(options);
  ASSERT_TRUE(workload.ok());
  std::int64_t ready = -1;
  std::thread process([&, path = (*workload)->socket_path()] {
    wire::Client client;
    ASSERT_TRUE(client.Connect(path));
    ASSERT_TRUE(client.SendHello(0, 1));
    ASSERT_TRUE(client.SendNames({{1, "gemm"}}));
    wire::WireOp record;
    record.kind = static_cast<std::uint8_t>(OpKind::kEventRecord);
    record.event = 1;
    record.host_ps = 0;
    wire::WireOp kernel = Kernel(1, 100);
    kernel.host_ps = 0;
    wire::WireOp query = Sync(OpKind::kEventQuery);
    query.event = 1;
    query.host_ps = 101 * kUs;  // the kernel [1, 101] and the record after it end then
    const wire::WireOp ops[] = {kernel, record, query};
    ASSERT_TRUE(client.SendOps(0, ops, 3, 0, 101 * kUs));
    wire::Reply reply;
    ASSERT_TRUE(client.ReadReply(reply));
    ready = reply.value;
    client.Close();
  });
  auto result = RunEngine(**workload, netmodel::testing::DgxCluster("h100-sxm", 1), Options());
  process.join();
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(ready, 1);
}

TEST(LiveServerTest, ABadClientIsDroppedAndItsRanksFail) {
  LiveOptions options;
  auto workload = LiveWorkload::Start(options);
  ASSERT_TRUE(workload.ok());
  std::thread process([path = (*workload)->socket_path()] {
    wire::Client client;
    ASSERT_TRUE(client.Connect(path));
    ASSERT_TRUE(client.SendHello(0, 1));
    // A frame over the size limit.
    wire::FrameHeader header{wire::FrameType::kOps, wire::kMaxFrameBytes + 1};
    std::string bytes;
    wire::Append(bytes, header);
    ASSERT_EQ(::write(client.fd(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    wire::Reply reply;
    EXPECT_FALSE(client.ReadReply(reply));  // the server hangs up
  });
  auto result = RunEngine(**workload, netmodel::testing::DgxCluster("h100-sxm", 1), Options());
  process.join();
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("process 0: a frame of 1048577 bytes"));
}

TEST(LiveServerTest, SocketLivesInAPrivateDirectory) {
  auto workload = LiveWorkload::Start(LiveOptions());
  ASSERT_TRUE(workload.ok());
  const std::string path = (*workload)->socket_path();
  struct stat st {};
  ASSERT_EQ(::stat(path.substr(0, path.rfind('/')).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  (*workload)->Stop();
  EXPECT_NE(::stat(path.c_str(), &st), 0);  // removed
}

}  // namespace
}  // namespace myriad::emulator
