// `myriad run` end to end with a process that speaks the shims' protocol, and the launcher's
// pieces: environments, ELF checks, failures and timeouts.
#include "myriad/emulator/launcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "tests/support/run_command.h"

namespace myriad::emulator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::pair<int, std::string> Myriad(const std::string& args) {
  return myriad::testing::RunCommand(std::string(MYRIAD_BINARY) + " " + args + " 2>&1");
}

TEST(LauncherTest, RunsProcessesOnVirtualDevicesAndPrintsVirtualTime) {
  const auto [status, out] =
      Myriad(std::string("run scenarios/dgx-h100.toml --processes 2 --devices-per-process 4 "
                         "--launch-latency-us 1 -- ") +
             MYRIAD_FAKE_PROCESS + " --kernel-us 100 --steps 2 --gpus 4");
  EXPECT_EQ(status, 0) << out;
  // One host thread drives 4 devices, synchronising after each kernel: its clock carries from
  // device to device. Device 0: [1, 101]; device 1 launched at 101: [102, 202]; ...
  EXPECT_THAT(out, HasSubstr("[rank 1] rank 1 of 2 (local 1), 4 of 8 devices"));
  EXPECT_THAT(out, HasSubstr("[rank 0] step 0 device 0: 101.000 us"));
  EXPECT_THAT(out, HasSubstr("[rank 0] step 0 device 3: 404.000 us"));
  EXPECT_THAT(out, HasSubstr("[rank 1] step 1 device 0: 505.000 us"));
  EXPECT_THAT(out, HasSubstr("myriad run: process"));
  EXPECT_THAT(out, HasSubstr("8 ranks | 32 ops simulated"));
  EXPECT_THAT(out, HasSubstr("total time              808.000 us"));
}

TEST(LauncherTest, ExitStatusAndCrashesAreReported) {
  const auto [status, out] = Myriad(std::string("run scenarios/dgx-h100.toml --processes 1 -- ") +
                                    MYRIAD_FAKE_PROCESS + " --exit-status 7");
  EXPECT_EQ(status, 7) << out;
  EXPECT_THAT(out, HasSubstr("myriad: error: rank 0 (pid "));
  EXPECT_THAT(out, HasSubstr(") exited with status 7"));

  const auto [crash_status, crash] =
      Myriad(std::string("run scenarios/dgx-h100.toml --processes 4 --devices-per-process 2 -- ") +
             MYRIAD_FAKE_PROCESS + " --crash-at-step 0 --steps 2 --gpus 2");
  EXPECT_EQ(crash_status, 128 + 11) << crash;
  EXPECT_THAT(crash, HasSubstr("was killed by signal 11 (SIGSEGV)"));
  // Every process crashes; the first one that did is the cause, named first.
  EXPECT_THAT(crash, ::testing::ContainsRegex("(^|\n)myriad: error: rank [0-3] \\(pid [0-9]+\\) "
                                              "was killed by signal 11 \\(SIGSEGV\\)\n"));
}

// The engine fails while the processes wait for its answers: they are told why and the run
// ends (it used to wait for them forever).
TEST(LauncherTest, AFailedRunTellsTheWaitingProcessesWhy) {
  const auto [status, out] =
      Myriad(std::string("run scenarios/dgx-h100.toml --processes 2 --timeout 60 -- ") +
             MYRIAD_FAKE_PROCESS + " --bad-op-at-step 1 --steps 3");
  EXPECT_NE(status, 0) << out;
  // Both processes send it at the same step: whichever the server reads first is the cause.
  EXPECT_THAT(out, ::testing::ContainsRegex(
                       "myriad: error: rank [01]: its process sent an unknown op kind 200"));
  EXPECT_THAT(out, ::testing::ContainsRegex(
                       "the run ended: rank [01]: its process sent an unknown op kind 200"));
  EXPECT_THAT(out, Not(HasSubstr("timed out")));
}

TEST(LauncherTest, TimeoutStopsEverything) {
  const auto [status, out] = Myriad(
      "run scenarios/dgx-h100.toml --processes 2 --timeout 0.5 -- "
      "sleep 30");
  EXPECT_EQ(status, 124) << out;
  EXPECT_THAT(out, HasSubstr("timed out after 0.5 s of wall time"));
}

// Processes whose command line says `sleep TAG`, from the process table.
int ProcessesRunning(const std::string& tag) {
  const auto [status, out] = myriad::testing::RunCommand(
      "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done | "
      "grep -c '^sleep " +
      tag + " ' || true");
  (void)status;
  return std::atoi(out.c_str());
}

// Killing myriad, however it is done, leaves no process of the run and no socket directory.
TEST(LauncherTest, KillingMyriadLeavesNothingBehind) {
  for (const char* signal : {"TERM", "INT", "KILL"}) {
    const std::string tag = std::string("31.") + std::to_string(::getpid() % 1000) + signal[0];
    const std::string log = ::testing::TempDir() + "myriad_kill_" + signal + ".log";
    // Each process prints its socket, then becomes `sleep TAG`.
    const auto [status, out] = myriad::testing::RunCommand(
        std::string(MYRIAD_BINARY) +
        " run scenarios/dgx-h100.toml --processes 3 -- sh -c 'echo \"$MYRIAD_SOCKET\"; exec "
        "sleep " +
        tag + "' > " + log +
        " 2>&1 & pid=$!; "
        "for i in $(seq 100); do [ \"$(grep -c /socket " +
        log +
        ")\" = 3 ] && break; "
        "sleep 0.05; done; kill -" +
        signal + " $pid; wait $pid; echo \"status $?\"");
    EXPECT_THAT(out, HasSubstr("status ")) << signal;
    std::vector<std::string> dirs;
    std::ifstream in(log);
    std::string line;
    while (std::getline(in, line)) {
      const auto at = line.find("/tmp/myriad-");
      if (at != std::string::npos) dirs.push_back(line.substr(at, line.rfind('/') - at));
    }
    // The reaper's moment: up to 10 s, for slow (sanitizer) builds on a loaded machine.
    auto left_behind = [&] {
      int n = ProcessesRunning(tag);
      for (const std::string& dir : dirs) n += ::access(dir.c_str(), F_OK) == 0;
      return n;
    };
    for (int i = 0; i < 100 && left_behind() > 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(ProcessesRunning(tag), 0) << signal;
    for (const std::string& dir : dirs)
      EXPECT_NE(::access(dir.c_str(), F_OK), 0) << signal << ": " << dir << " is still there";
  }
}

// A launch that runs out of file descriptors part way says so and leaves nothing running.
TEST(LauncherTest, RunningOutOfFileDescriptorsIsAClearError) {
  const std::string tag = "32." + std::to_string(::getpid() % 1000);
  const auto [status, out] = myriad::testing::RunCommand(
      "ulimit -n 64; " + std::string(MYRIAD_BINARY) +
      " run scenarios/h100-x128.toml --processes 100 -- sleep " + tag + " 2>&1");
  EXPECT_EQ(status, 2) << out;
  EXPECT_THAT(out, HasSubstr("raise the open-file limit, ulimit -n"));
  EXPECT_EQ(ProcessesRunning(tag), 0);
}

TEST(LauncherTest, BadLaunchesAreExitStatusTwo) {
  auto [status, out] = Myriad("run scenarios/dgx-h100.toml --processes 16 -- true");
  EXPECT_EQ(status, 2);
  EXPECT_THAT(out,
              HasSubstr("16 processes x 1 devices need 16 GPUs; the cluster has 8 (dgx-h100)"));
  std::tie(status, out) = Myriad("run scenarios/dgx-h100.toml --processes 1 -- /no/such/binary");
  EXPECT_EQ(status, 2);
  EXPECT_THAT(out, HasSubstr("cannot start /no/such/binary"));
  std::tie(status, out) = Myriad("run scenarios/dgx-h100.toml");
  EXPECT_EQ(status, 2);
  EXPECT_THAT(out, HasSubstr("missing the command to run (after --, or [launch] command)"));
}

// torchrun as the command: one agent per node, seeing the node's GPUs, told the nodes, its
// node and the rendezvous (PET_*, torchrun's defaults for its flags). A stand-in torchrun
// prints what it was given.
TEST(LauncherTest, TorchrunAsTheCommandRunsOneAgentPerNode) {
  const std::string dir = ::testing::TempDir() + "myriad_fake_torchrun";
  ASSERT_EQ(std::system(("mkdir -p " + dir +
                         " && printf '#!/bin/sh\\necho agent "
                         "$PET_NODE_RANK of $PET_NNODES at $PET_MASTER_ADDR sees $MYRIAD_DEVICES "
                         "port-set=${PET_MASTER_PORT:+yes}\\n' > " +
                         dir + "/torchrun && chmod +x " + dir + "/torchrun")
                            .c_str()),
            0);
  auto [status, out] = Myriad("run tests/examples/data/h100-2-nodes.toml -- " + dir +
                              "/torchrun --nproc-per-node 8 train.py");
  EXPECT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("agent 0 of 2 at 127.0.0.1 sees 8 port-set=yes")) << out;
  EXPECT_THAT(out, HasSubstr("agent 1 of 2 at 127.0.0.1 sees 8 port-set=yes")) << out;
  // Agents of fewer GPUs than a node share it, and each is still a node of torchrun's.
  std::tie(status, out) = Myriad(
      "run tests/examples/data/h100-2-nodes.toml --processes 4 "
      "--devices-per-process 4 -- " +
      dir + "/torchrun --nproc-per-node 4 train.py");
  EXPECT_EQ(status, 0) << out;
  for (int agent = 0; agent < 4; ++agent)
    EXPECT_THAT(out, HasSubstr("agent " + std::to_string(agent) + " of 4 at 127.0.0.1 sees 4"))
        << out;
  // A program that is not torchrun gets no agent variables, and one process per GPU.
  std::tie(status, out) = Myriad(
      "run scenarios/dgx-h100.toml --processes 1 -- sh -c 'echo nnodes=${PET_NNODES:-unset}'");
  EXPECT_THAT(out, HasSubstr("nnodes=unset")) << out;
}

TEST(LauncherTest, EnvironmentsAsTorchrunMpiAndSlurmSetThem) {
  LaunchOptions o;
  o.processes = 16;
  o.devices_per_process = 1;
  o.processes_per_node = 8;
  o.socket_path = "/tmp/x/socket";
  o.shim_dir = "/opt/shims";
  o.placement = *PlaceProcesses(16, 1, 8, 16);
  auto env = ProcessEnvironment(o, 11, 12345);
  EXPECT_EQ(env["RANK"], "11");
  EXPECT_EQ(env["WORLD_SIZE"], "16");
  EXPECT_EQ(env["LOCAL_RANK"], "3");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "8");
  EXPECT_EQ(env["GROUP_RANK"], "1");
  EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
  EXPECT_EQ(env["MASTER_PORT"], "12345");
  // Every GPU of the node is visible; the program picks its own by LOCAL_RANK.
  EXPECT_EQ(env.count("CUDA_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(env["MYRIAD_DEVICES"], "8");
  EXPECT_EQ(env["MYRIAD_SOCKET"], "/tmp/x/socket");
  EXPECT_THAT(env["LD_LIBRARY_PATH"], ::testing::StartsWith("/opt/shims"));
  o.env = LaunchEnv::kMpi;
  env = ProcessEnvironment(o, 11, 1);
  EXPECT_EQ(env["OMPI_COMM_WORLD_RANK"], "11");
  EXPECT_EQ(env["OMPI_COMM_WORLD_LOCAL_RANK"], "3");
  EXPECT_EQ(env["OMPI_COMM_WORLD_LOCAL_SIZE"], "8");
  EXPECT_EQ(env.count("RANK"), 0u);
  o.env = LaunchEnv::kSlurm;
  o.devices_per_process = 4;
  env = ProcessEnvironment(o, 11, 1);
  EXPECT_EQ(env["SLURM_PROCID"], "11");
  EXPECT_EQ(env["SLURM_NODEID"], "1");
  EXPECT_EQ(env["SLURM_NNODES"], "2");
  EXPECT_EQ(env["SLURM_LOCALID"], "3");
  EXPECT_FALSE(ParseLaunchEnv("pbs").ok());
}

// The local sizes are the launch's, not the node's: two processes on an 8-GPU node.
TEST(LauncherTest, LocalSizesAreTrueToTheLaunch) {
  LaunchOptions o;
  o.processes = 2;
  o.processes_per_node = 8;
  o.placement = *PlaceProcesses(2, 1, 8, 8);
  for (LaunchEnv kind : {LaunchEnv::kTorchrun, LaunchEnv::kMpi}) {
    o.env = kind;
    auto env = ProcessEnvironment(o, 1, 1);
    EXPECT_EQ(env[kind == LaunchEnv::kMpi ? "OMPI_COMM_WORLD_LOCAL_SIZE" : "LOCAL_WORLD_SIZE"],
              "2");
    EXPECT_EQ(env["MYRIAD_DEVICES"], "8");
  }
  // 10 processes over 8-GPU nodes: the second node holds 2.
  o.processes = 10;
  o.placement = *PlaceProcesses(10, 1, 8, 16);
  o.env = LaunchEnv::kTorchrun;
  EXPECT_EQ(ProcessEnvironment(o, 9, 1)["LOCAL_WORLD_SIZE"], "2");
  EXPECT_EQ(ProcessEnvironment(o, 3, 1)["LOCAL_WORLD_SIZE"], "8");
}

TEST(LauncherTest, PlacementGivesEachProcessItsNodesGpus) {
  auto p = PlaceProcesses(16, 1, 8, 16);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)[9].first_gpu, 8);
  EXPECT_EQ((*p)[9].visible, 8);
  p = PlaceProcesses(4, 2, 8, 16);  // four processes of 2 GPUs share node 0
  EXPECT_EQ((*p)[3].first_gpu, 0);
  p = PlaceProcesses(4, 2, 8, 16, /*agents=*/true);  // torchrun agents: each its own 2
  EXPECT_EQ((*p)[3].first_gpu, 6);
  EXPECT_EQ((*p)[3].visible, 2);
  p = PlaceProcesses(1, 128, 8, 128);  // one process drives 16 nodes: it sees its own 128
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)[0].visible, 128);
  EXPECT_FALSE(PlaceProcesses(3, 8, 8, 16).ok());
}

TEST(LauncherTest, ElfInspection) {
  auto self = InspectElf(MYRIAD_FAKE_PROCESS);
  ASSERT_TRUE(self.ok());
  EXPECT_FALSE(self->has_device_code);
  EXPECT_FALSE(self->links_cudart_shared);
  EXPECT_TRUE(CheckNotStaticCudart(MYRIAD_FAKE_PROCESS).ok());
  EXPECT_TRUE(CheckNotStaticCudart("scenarios/dgx-h100.toml").ok());  // not ELF: started as is
  EXPECT_FALSE(InspectElf("/no/such/file").ok());
  EXPECT_EQ(FindExecutable("sh").substr(FindExecutable("sh").size() - 3), "/sh");
}

}  // namespace
}  // namespace myriad::emulator
