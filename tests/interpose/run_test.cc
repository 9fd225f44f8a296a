// Unmodified CUDA binaries under `myriad run`: the program's own timers print virtual time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "tests/support/run_command.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::pair<int, std::string> Myriad(const std::string& args) {
  return myriad::testing::RunCommand(std::string(MYRIAD_BINARY) + " " + args + " 2>&1");
}

const std::string kPrograms = MYRIAD_TEST_PROGRAMS;

// These tests time kernels no model knows by the 10 us fallback (--no-launch-guess), so that
// the figures the programs print are worked out by hand; AKernelNoModelKnowsIsTimedByAGuess
// checks the guess.
TEST(RunTest, ProgramTimersShowVirtualTime) {
  const auto [status, out] = Myriad(
      "run scenarios/dgx-h100.toml --processes 1 --no-launch-guess "
      "--devices-per-process 8 -- " +
      kPrograms + "/timing_shared");
  ASSERT_EQ(status, 0) << out;
  // The scenario's GPU, as device properties.
  EXPECT_THAT(out, HasSubstr("devices 8: NVIDIA H100 80GB HBM3, 132 SMs, 80 GiB"));
  // Ten kernels without a measurement: 10 us each (the fallback) between the two events; the
  // host clock also covers the 2 us launch latency; the first poll looks at the thread's
  // clock, and each repeat jumps to the next completion, so the loop polls once more than
  // there are kernels and records; the device-to-host copy gives zeros.
  EXPECT_THAT(out, HasSubstr("events 0.100 ms, host clock 0.102 ms, 12 polls, copied back 0, "
                             "error no error"));
  EXPECT_THAT(out, HasSubstr("10 x busy(float*)"));
  EXPECT_THAT(out, HasSubstr("peak memory"));
  // What it read back no kernel wrote (zeros here), and the summary says so.
  EXPECT_THAT(out, HasSubstr("note: 16 bytes were copied back from device memory: Myriad times "
                             "kernels but does not run them"));
}

// Loops that wait for the clock end: before the first CUDA call on the real clock, after it
// on the virtual one (exactly 50 sleeps of 100 us for 5 ms, every run); a thread's sleep
// takes its virtual time while another waits for the GPU.
TEST(RunTest, SleepLoopsEndAndSleepsTakeVirtualTime) {
  for (int run = 0; run < 2; ++run) {
    const auto [status, out] = Myriad("run scenarios/dgx-h100.toml --processes 1 --timeout 60 -- " +
                                      kPrograms + "/sleep_loop");
    ASSERT_EQ(status, 0) << out;
    EXPECT_THAT(out, HasSubstr("before CUDA: the loop ended (slept)"));
    EXPECT_THAT(out, HasSubstr("after CUDA: 50 sleeps, 5.000 ms"));
    EXPECT_THAT(out, HasSubstr("timed waits: 3"));
    // 2 ms of sleep on the second thread, whatever the GPU work beside it.
    EXPECT_THAT(out, HasSubstr("sleeper: 2.000 ms")) << out;
  }
}

// Threads idle in sem_wait, a blocking pipe read and timed semaphore waits hold no virtual
// time: the main thread's synchronize returns (without the wrappers the run hangs until
// --timeout). The semaphore waiter resumes at its poster's clock; the reader, woken by
// nothing Myriad sees, at its own; four 0.5 ms timeouts take the timed waiter past 2 ms.
TEST(RunTest, ThreadsIdleInSemaphoresAndPipeReadsHoldNoTime) {
  for (int run = 0; run < 2; ++run) {
    const auto [status, out] =
        Myriad("run scenarios/dgx-h100.toml --processes 1 --timeout 60 --no-launch-guess -- " +
               kPrograms + "/idle_waits");
    ASSERT_EQ(status, 0) << out;
    EXPECT_THAT(out, HasSubstr("gpu 0.502 ms, semaphore waiter resumed at 0.502 ms, reader at "
                               "0.000 ms, 4 timeouts"))
        << out;
  }
}

// Threads asleep where the preload cannot see (OpenMP's pool after a parallel region, a bare
// futex wait) are found asleep by the shim's idle watch and hold no virtual time: the main
// thread's synchronize returns (before the watch the run hung until --timeout).
TEST(RunTest, ThreadsAsleepInBareFutexesHoldNoTime) {
  for (int run = 0; run < 2; ++run) {
    const auto [status, out] =
        Myriad("run scenarios/dgx-h100.toml --processes 1 --timeout 60 --no-launch-guess -- " +
               kPrograms + "/bare_waits");
    ASSERT_EQ(status, 0) << out;
    EXPECT_THAT(out, HasSubstr("sum 524288 on ")) << out;
    EXPECT_THAT(out, HasSubstr("gpu 0.502 ms")) << out;
  }
}

// A loop bounded by a table the program copied from the host is counted from the table's
// bytes (known contents): halving every entry halves the kernel's time above the H100's 2 us
// floor; once a kernel has written the table its values are not known, and the loop is
// bounded by what the kernel's pointers reach (far fewer trips). Same output every run.
TEST(RunTest, LoopsBoundedByATableFromTheHostFollowItsValues) {
  std::string first;
  for (int run = 0; run < 2; ++run) {
    const auto [status, out] = Myriad("run scenarios/dgx-h100.toml --processes 1 --timeout 60 -- " +
                                      kPrograms + "/known_contents");
    ASSERT_EQ(status, 0) << out;
    std::smatch m;
    const std::regex times(
        "lengths from the host: ([0-9.]+) us\nhalved on the host: ([0-9.]+) us\nhalved by a "
        "kernel: ([0-9.]+) us");
    ASSERT_TRUE(std::regex_search(out, m, times)) << out;
    const double full = std::stod(m[1]) - 2, half = std::stod(m[2]) - 2, unknown = std::stod(m[3]);
    EXPECT_GT(full, 20) << out;
    EXPECT_NEAR(half, full / 2, 0.02 * full) << out;
    EXPECT_LT(unknown, 0.2 * (half + 2)) << out;
    EXPECT_THAT(out, HasSubstr("error no error")) << out;
    if (run == 0) first = out;
    EXPECT_EQ(out, first);
  }
}

// Work a thread enqueued before letting go of a mutex comes before what the thread that takes
// it enqueues next, even when the first thread's batch has not been sent yet: the second
// thread's synchronisation waits for all 50 kernels (10 us each, the fallback), every run.
TEST(RunTest, AMutexOrdersTheWorkOfTheThreadsThatShareIt) {
  for (int run = 0; run < 2; ++run) {
    const auto [status, out] =
        Myriad("run scenarios/dgx-h100.toml --processes 1 --timeout 60 --no-launch-guess -- " +
               kPrograms + "/lock_handoff");
    ASSERT_EQ(status, 0) << out;
    EXPECT_THAT(out, HasSubstr("the handed-over work took 0.502 ms")) << out;
  }
}

// Before its first CUDA call a process reports nothing: a shell that waits for a command
// substitution (a blocking read of a pipe) and never uses CUDA does not join the run.
TEST(RunTest, AProcessThatNeverUsesCudaMayWaitInReads) {
  const auto [status, out] = Myriad(
      "run scenarios/dgx-h100.toml --processes 1 --timeout 60 -- bash -c 'x=$(sleep 0.3; echo "
      "piped); echo $x'");
  EXPECT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("piped"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("connected after"))) << out;
}

// Python processes get Myriad's hook (interpose/python/sitecustomize.py) first on PYTHONPATH;
// it runs the sitecustomize it shadows (here a user's), so nothing the user set up is lost.
TEST(RunTest, PythonHookRunsTheSitecustomizeItShadows) {
  const std::string site = ::testing::TempDir() + "myriad_user_site";
  ASSERT_EQ(std::system(("mkdir -p " + site +
                         " && echo 'import builtins; "
                         "builtins.USER_SITE_RAN = True' > " +
                         site + "/sitecustomize.py")
                            .c_str()),
            0);
  const auto [status, out] = myriad::testing::RunCommand(
      "PYTHONPATH=" + site + " " + std::string(MYRIAD_BINARY) +
      " run scenarios/dgx-h100.toml --processes 1 --timeout 60 -- python3 -c \"import builtins, "
      "sys; print('user site:', getattr(builtins, 'USER_SITE_RAN', False), "
      "sys.modules['sitecustomize'].__file__)\" 2>&1");
  EXPECT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("user site: True")) << out;
  EXPECT_THAT(out, HasSubstr("shims/python/sitecustomize.py")) << out;
}

// Copies and memsets to or from freed memory, to 0x1234 or past an allocation's end fail with
// cudaErrorInvalidValue (not sticky) and write nothing; they used to succeed.
TEST(RunTest, CopiesOutsideLiveAllocationsFailAsCudasDo) {
  const auto [status, out] = Myriad("run scenarios/dgx-h100.toml --processes 1 --timeout 60 -- " +
                                    kPrograms + "/copy_errors");
  EXPECT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("copy errors: ok")) << out;
  // The report counts what the program was refused.
  EXPECT_THAT(out, HasSubstr("the program's CUDA calls returned errors, as a real GPU's would "
                             "have: cudaErrorInvalidValue x 8"))
      << out;
}

// Launch shapes CUDA refuses fail as CUDA's do (cudaErrorInvalidConfiguration, not sticky);
// <<<0, 0>>> and <<<1, 4096>>> used to succeed.
TEST(RunTest, BadLaunchConfigurationsFailAsCudasDo) {
  const auto [status, out] = Myriad("run scenarios/dgx-h100.toml --processes 1 --timeout 60 -- " +
                                    kPrograms + "/launch_errors");
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("<<<1, 4096>>>: cudaErrorInvalidConfiguration"));
  EXPECT_THAT(out, HasSubstr("launch errors: ok"));
}

// Pitched allocations and 2D copies, __device__ variables through their symbols, and
// stream-ordered memory pools move real bytes and keep their books (memory_apis.cu checks
// every value it gets back and the errors of bad calls).
TEST(RunTest, PitchedCopiesSymbolsAndMemoryPools) {
  const auto [status, out] = Myriad("run scenarios/dgx-h100.toml --processes 1 --timeout 60 -- " +
                                    kPrograms + "/memory_apis");
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("pitch 512, row 2: 20 21 22 23 24"));
  EXPECT_THAT(out, HasSubstr("symbol: size 16, [2..3] 2.5 3.5, [1] 1.5"));
  EXPECT_THAT(out, HasSubstr("default pool: 1048576 bytes used"));
  EXPECT_THAT(out, HasSubstr("own pool: high 4096, now 0"));
  EXPECT_THAT(out, HasSubstr("cudaMalloc(SIZE_MAX): cudaErrorMemoryAllocation"));
  EXPECT_THAT(out, HasSubstr("zeroed and copied from fresh memory: as written"));
  EXPECT_THAT(out, HasSubstr("memory apis: ok"));
  EXPECT_THAT(out, Not(HasSubstr("not supported")));
}

// A kernel no model knows (`busy(float*)`, 1024 x 256 threads) is timed from its own code,
// which Myriad reads out of the program's fatbin: each thread loads and stores one float
// (2 MiB in all), bounded by the 1 MiB allocation its pointer reaches, at 0.9 x 3.35 TB/s,
// 0.348 us, plus the 2 us floor: 2.348 us each, 23.478 us for ten.
TEST(RunTest, AKernelNoModelKnowsIsTimedFromItsCode) {
  const auto [status, out] =
      Myriad("run scenarios/dgx-h100.toml --processes 1 -- " + kPrograms + "/timing_shared");
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("events 0.023 ms"));
  EXPECT_THAT(out, HasSubstr("kernel code                          10 ops           23.478 us"));
  EXPECT_THAT(out, HasSubstr("launch guess                          0 ops"));
}

// Kernels loaded through the driver API (cuModuleLoad of a cubin file, as Inductor's static
// launcher does; Triton's cache keeps the PTX beside it): the cubin's parameter layout gives the
// launch's arguments (n = 2^24, the pointers' 64 MiB each), the PTX beside it the kernel's code.
// Its work, 2^24 x 12 bytes, is bounded by the 128 MiB its pointers reach: 134,217,728 bytes at
// 0.9 x 3.35 TB/s plus the 2 us floor, 46.517 us a launch. Loaded from memory
// (cuModuleLoadData, as Triton's own launcher does), its code is the PTX the cubin carries
// (ptxas -lineinfo, Triton's default; here nvcc -lineinfo), and without it a guess from the
// launch. A cubin loaded from its file that carries its PTX needs none beside it.
TEST(RunTest, KernelsLoadedThroughTheDriverAreTimedFromTheirCode) {
  const std::string program = kPrograms + "/driver_module " + kPrograms + "/driver_kernels.cubin";
  auto [status, out] = Myriad("run scenarios/dgx-h100.toml --processes 1 -- " + program);
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("4 launches of scale_add over 16777216 floats: 0.186 ms"));
  EXPECT_THAT(out, HasSubstr("kernel code                           4 ops          186.067 us"));
  std::tie(status, out) =
      Myriad("run scenarios/dgx-h100.toml --processes 1 -- " + program + " --from-memory");
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("launch guess                          4 ops"));
  const std::string lineinfo =
      kPrograms + "/driver_module " + kPrograms + "/driver_kernels_lineinfo.cubin";
  for (const char* how : {" --from-memory", ""}) {
    std::tie(status, out) =
        Myriad("run scenarios/dgx-h100.toml --processes 1 -- " + lineinfo + how);
    ASSERT_EQ(status, 0) << out;
    EXPECT_THAT(out, HasSubstr("kernel code                           4 ops          186.067 us"))
        << how;
  }
  // A missing file is the driver's error, not a crash.
  std::tie(status, out) = Myriad("run scenarios/dgx-h100.toml --processes 1 -- " + kPrograms +
                                 "/driver_module /nonexistent.cubin");
  EXPECT_NE(status, 0);
  EXPECT_THAT(out, HasSubstr("cuModuleLoad(&module, argv[1]) failed: file not found"));
}

TEST(RunTest, RealHostClockCanBeChosen) {
  const auto [status, out] = myriad::testing::RunCommand(
      "MYRIAD_HOST_CLOCK=real " + std::string(MYRIAD_BINARY) +
      " run scenarios/dgx-h100.toml --processes 1 --no-launch-guess -- " + kPrograms +
      "/timing_shared 2>&1");
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("events 0.100 ms"));  // events stay virtual
  EXPECT_THAT(out, ::testing::Not(HasSubstr("host clock 0.102 ms")));
}

TEST(RunTest, RecordedRunReplays) {
  const std::string trace = ::testing::TempDir() + "myriad_run_test_record.jsonl";
  auto [status, out] = Myriad("run scenarios/dgx-h100.toml --processes 1 --record " + trace +
                              " -- " + kPrograms + "/timing_shared");
  ASSERT_EQ(status, 0) << out;
  std::tie(status, out) = Myriad("replay " + trace + " --scenario scenarios/dgx-a100.toml");
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("on dgx-a100"));
  // The counts from the kernel's code travel in the trace and are timed on the A100.
  EXPECT_THAT(out, HasSubstr("kernel code                          10 ops           37.045 us"));
}

TEST(RunTest, GraphLaunchesReplayTheCapturedOps) {
  const auto [status, out] = Myriad(
      "run scenarios/dgx-h100.toml --processes 1 --no-launch-guess -- " + kPrograms + "/graph");
  ASSERT_EQ(status, 0) << out;
  // Six captured kernels (10 us each, the fallback), three launches, one after the other; at
  // each, the side stream's kernel runs beside the five of the capture's stream (0.180 ms if
  // the branches ran one after the other).
  EXPECT_THAT(out, HasSubstr("capturing 1, sync refused 1, 3 graph launches: 0.150 ms"));
  EXPECT_THAT(out, HasSubstr("18 x step(float*)"));
  EXPECT_THAT(out, HasSubstr("user object: created 1, retained by the capture's graph 1 (that "
                             "graph 1), destroyed 0 with the graph, 1 with its instantiation"));
}

TEST(RunTest, HostWorkIsFreeWhenModelledAndCountedWhenMeasured) {
  auto millis = [](const std::string& out) {
    const auto at = out.find("host clock ");
    return at == std::string::npos ? -1.0 : std::stod(out.substr(at + 11));
  };
  auto [status, out] =
      Myriad("run scenarios/dgx-h100.toml --processes 1 -- " + kPrograms + "/hostwork");
  ASSERT_EQ(status, 0) << out;
  // Modelled: the 40 ms of spinning take no virtual time; two kernels and the launch latency.
  EXPECT_LT(millis(out), 1.0) << out;
  std::tie(status, out) =
      Myriad("run tests/interpose/data/measured-host-time.toml --processes 1 -- " + kPrograms +
             "/hostwork");
  ASSERT_EQ(status, 0) << out;
  // Measured at half speed: at least 20 ms of the 40 ms of CPU time.
  EXPECT_GT(millis(out), 19.0) << out;
}

// Managed and pinned host memory behave as CUDA's: real memory, the frees CUDA accepts, the
// mix-ups it refuses; managed memory counts against the device.
TEST(RunTest, ManagedAndPinnedMemoryBehaveAsCudas) {
  const auto [status, out] =
      Myriad("run scenarios/dgx-h100.toml --processes 1 -- " + kPrograms + "/host_memory");
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("managed: type managed"));
  EXPECT_THAT(out, HasSubstr("pinned: type host"));
  EXPECT_THAT(out, HasSubstr("mapped: same address 1"));
  EXPECT_THAT(out, HasSubstr("managed counts on the device: 1"));
  EXPECT_THAT(out, HasSubstr("all frees behave as CUDA's"));
  EXPECT_THAT(out, HasSubstr("peak memory"));
}

// The first line of Myriad's own that is not a process's output.
std::string FirstMyriadLine(const std::string& out) {
  std::size_t start = 0;
  while (start < out.size()) {
    const std::size_t end = out.find('\n', start);
    const std::string line = out.substr(start, end - start);
    if (line.rfind("myriad", 0) == 0) return line;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

// A process exits 3 while its peer waits for their AllReduce: the peer never hears that it
// succeeded, the cause is the first thing Myriad says, the status is passed through, and the
// report of what ran is written, marked as failed.
TEST(RunTest, APeerThatExitsFailsTheRunAndNoWaitSucceeds) {
  const std::string report = ::testing::TempDir() + "myriad_peer_exit.json";
  for (int round = 0; round < 3; ++round) {
    const auto [status, out] = Myriad(
        "run scenarios/dgx-h100.toml --processes 2 --timeout 60 "
        "--report " +
        report + " -- " + kPrograms + "/peer_exit");
    EXPECT_EQ(status, 3) << out;
    EXPECT_THAT(out, Not(HasSubstr("second allreduce done: no error")));
    EXPECT_THAT(FirstMyriadLine(out),
                ::testing::MatchesRegex("myriad: error: rank 1 \\(pid [0-9]+\\) exited with "
                                        "status 3"))
        << out;
    EXPECT_THAT(out, HasSubstr("FAILED (exit status 3): rank 1"));
    std::ifstream in(report);
    const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_THAT(json, HasSubstr("\"failure\": {\"cause\": \"rank 1 (pid "));
    EXPECT_THAT(json, HasSubstr("\"exit_status\": 3"));
  }
}

// A thread waiting for a small collective's data holds no virtual time back (its peer first
// needs virtual time to pass it) and resumes at the latest member's clock, in every run.
TEST(RunTest, ASmallCollectivesWaitResumesAtTheLatestCall) {
  std::string first;
  for (int round = 0; round < 2; ++round) {
    const auto [status, out] = Myriad("run scenarios/dgx-h100.toml --processes 2 --timeout 60 -- " +
                                      kPrograms + "/small_collective");
    ASSERT_EQ(status, 0) << out;
    std::smatch called, resumed;
    ASSERT_TRUE(std::regex_search(out, called,
                                  std::regex("rank 1 calls the small all-reduce at ([0-9.]+) us")))
        << out;
    ASSERT_TRUE(std::regex_search(out, resumed, std::regex("rank 0 resumes at ([0-9.]+) us")))
        << out;
    EXPECT_GT(std::stod(called[1]), 50) << out;  // after the large all-reduce
    EXPECT_EQ(resumed[1], called[1]) << out;
    EXPECT_THAT(out, HasSubstr("rank 0 reads 3"));
    EXPECT_THAT(out, HasSubstr("rank 1 reads 3"));
    if (round == 0) first = resumed[1];
    EXPECT_EQ(resumed[1], first);
  }
}

// A process killed by a signal: the status is 128 + the signal, exactly.
TEST(RunTest, AKilledProcessPassesItsSignalThrough) {
  const auto [status, out] =
      myriad::testing::RunCommand("EXIT_SIGNAL=9 " + std::string(MYRIAD_BINARY) +
                                  " run scenarios/dgx-h100.toml --processes 2 --timeout 60 -- " +
                                  kPrograms + "/peer_exit 2>&1");
  EXPECT_EQ(status, 128 + 9) << out;
  EXPECT_THAT(FirstMyriadLine(out),
              ::testing::MatchesRegex(
                  "myriad: error: rank 1 \\(pid [0-9]+\\) was killed by signal 9 \\(SIGKILL\\)"))
      << out;
}

// A run stuck where Myriad cannot see (both processes in accept() on a socket nobody connects
// to, as a rendezvous store waits for a worker that never comes) ends once no thread of the
// program has used the CPU for --hang-timeout seconds, naming each process's wait, and the
// report is written. Computing on the CPU without a CUDA call for longer is no hang.
TEST(RunTest, AStuckRunEndsNamingWhereEachProcessWaits) {
  const std::string report = ::testing::TempDir() + "myriad_stuck_wait.json";
  const auto [status, out] = Myriad(
      "run scenarios/dgx-h100.toml --processes 2 --timeout 120 "
      "--hang-timeout 2 --report " +
      report + " -- " + kPrograms + "/stuck_wait");
  EXPECT_EQ(status, 124) << out;
  EXPECT_THAT(out, HasSubstr("waiting for a worker"));
  EXPECT_THAT(
      FirstMyriadLine(out),
      ::testing::MatchesRegex(
          "myriad: error: no progress for 2 s of wall time: no thread of the program "
          "did work on the CPU.*: rank 0 \\(pid [0-9]+, stuck_wait\\): thread [0-9]+ "
          "\\(stuck_wait\\) in accept4? on a TCP socket listening on 127\\.0\\.0\\.1:[0-9]+; "
          "rank 1 .* in accept4? on a TCP socket listening on .*"))
      << out;
  std::ifstream in(report);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(json, HasSubstr("\"failure\": {\"cause\": \"no progress for 2 s"));

  const auto [busy_status, busy_out] =
      Myriad("run scenarios/dgx-h100.toml --processes 1 --timeout 120 --hang-timeout 1 -- " +
             kPrograms + "/stuck_wait busy");
  EXPECT_EQ(busy_status, 0) << busy_out;
  EXPECT_THAT(busy_out, HasSubstr("busy done"));
}

// PyTorch loads NVIDIA's libraries by path at import: loading one that carries its own runtime
// is fine; running device code through that runtime is refused, naming the library.
TEST(RunTest, LibraryWithStaticRuntimeMayLoad) {
  const auto [status, out] = Myriad("run scenarios/dgx-h100.toml --processes 1 -- " + kPrograms +
                                    "/dlopen_static " + kPrograms + "/libstatic_kernels.so");
  EXPECT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("libstatic_kernels.so: yes"));
}

TEST(RunTest, LibraryWithStaticRuntimeRunningKernelsIsRefused) {
  const auto [status, out] =
      Myriad("run scenarios/dgx-h100.toml --processes 1 -- " + kPrograms + "/dlopen_static " +
             kPrograms + "/libstatic_kernels.so launch_hidden");
  EXPECT_EQ(status, 2) << out;
  EXPECT_THAT(out, HasSubstr("libstatic_kernels.so uses its own (statically linked) CUDA runtime, "
                             "which Myriad cannot intercept"));
  EXPECT_THAT(out, Not(HasSubstr("launched launch_hidden")));
}

TEST(RunTest, StaticallyLinkedRuntimeIsRefused) {
  const auto [status, out] =
      Myriad("run scenarios/dgx-h100.toml --processes 1 -- " + kPrograms + "/timing_static");
  EXPECT_EQ(status, 2);
  EXPECT_THAT(out, HasSubstr("timing_static links the CUDA runtime statically, so Myriad cannot "
                             "intercept it: rebuild with -cudart shared"));
}

}  // namespace
