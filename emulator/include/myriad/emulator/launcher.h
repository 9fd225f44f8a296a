// `myriad run`'s launcher: checks the binary, starts its processes as torchrun, mpirun or
// Slurm would (with the shims preloaded and connected to the live server), relays their
// output, and reports how each one ended.
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "myriad/emulator/live.h"
#include "myriad/status.h"

namespace myriad::emulator {

enum class LaunchEnv { kTorchrun, kMpi, kSlurm };
Result<LaunchEnv> ParseLaunchEnv(const std::string& name);
// The name ParseLaunchEnv reads: torchrun, mpi, slurm.
const char* ToString(LaunchEnv env);

// What the ELF file says about the CUDA runtime.
struct CudaLinkage {
  bool has_device_code = false;      // a .nv_fatbin section
  bool links_cudart_shared = false;  // DT_NEEDED libcudart.so.*
  bool defines_cudart = false;       // defines cudaMalloc itself (static runtime)
};
Result<CudaLinkage> InspectElf(const std::string& path);
// Fails with "PATH links the CUDA runtime statically: rebuild with -cudart shared".
Status CheckNotStaticCudart(const std::string& path);
// Resolves a command name through PATH, as execvp would.
std::string FindExecutable(const std::string& command);

// Where each of `processes` processes runs, as a launcher places them: `gpus_per_node /
// devices_per_process` processes per node, each seeing every GPU of its node; a process that
// drives more GPUs than a node has sees its own `devices_per_process` GPUs. So do torchrun's
// agents (`agents`): several agents on one node are each given their own GPUs, as
// CUDA_VISIBLE_DEVICES does on a real node, since each one's workers pick theirs by a
// LOCAL_RANK that counts from 0. Fails when the processes need more GPUs than `total_gpus`.
Result<std::vector<ProcessPlacement>> PlaceProcesses(int processes, int devices_per_process,
                                                     int gpus_per_node, int total_gpus,
                                                     bool agents = false);

struct LaunchOptions {
  std::vector<std::string> command;
  int processes = 1;  // the world's: WORLD_SIZE and friends
  // Rank folding: only the processes in live_processes are started, in that order (empty: all
  // of them); the i-th started is Myriad's process i (MYRIAD_PROCESS) and, when the command is
  // torchrun, the rendezvous's node i. Of a world of fold_world ranks (MYRIAD_FOLD_WORLD),
  // live_ranks run (MYRIAD_FOLD_LIVE): the processes themselves, or the workers torchrun's
  // agents start (each starts only its live ones; interpose/python/sitecustomize.py).
  std::vector<int> live_processes;
  std::vector<int> live_ranks;
  int fold_world = 0;
  int devices_per_process = 1;
  int processes_per_node = 1;  // for LOCAL_RANK and friends: GPUs per node / devices per process
  // The devices each process sees (MYRIAD_DEVICES); empty: devices_per_process each.
  std::vector<ProcessPlacement> placement;
  // kMpi starts the processes through the real `mpirun` (MPI_Init then forms one world of
  // them), passing Myriad's environment on with -x; the others start them one by one.
  LaunchEnv env = LaunchEnv::kTorchrun;
  // The command is torchrun itself, one agent per node: each gets PET_NNODES, PET_NODE_RANK,
  // PET_MASTER_ADDR and PET_MASTER_PORT (torchrun's defaults for --nnodes, --node-rank,
  // --master-addr, --master-port), so its workers form one world over the nodes.
  bool agent_per_node = false;
  std::string socket_path;
  std::string shim_dir;        // holds libcudart.so.13 and friends
  double timeout_seconds = 0;  // 0: none
  bool prefix_output = true;   // "[rank N] " before each line when several processes run
  FILE* output = nullptr;      // where the processes' stdout and stderr go (null: ours)
  // More environment for every process (the virtual GPU's properties, clock settings).
  std::map<std::string, std::string> extra_env;
  // Set from another thread (the engine failed): the processes are stopped as on a timeout,
  // since they may be waiting for answers that will not come.
  const std::atomic<bool>* stop = nullptr;
  // Set by a signal handler to the signal that asked Myriad to stop (SIGINT, SIGTERM).
  const std::atomic<int>* stop_signal = nullptr;
};

struct ProcessEnd {
  int process = 0;
  int pid = 0;
  bool exited = false;             // else killed by a signal
  int status = 0;                  // exit status or signal number
  bool stopped_by_myriad = false;  // it was still running when Myriad stopped it
  int order = -1;                  // the order in which the processes ended (0: first)
  std::string who;                 // "rank 3", or "mpirun" (which started them all)
};

struct LaunchResult {
  std::vector<ProcessEnd> ends;
  bool timed_out = false;
  int stopped_by_signal = 0;  // Myriad was asked to stop by this signal
  // The first process, in the order they ended, that failed on its own (exit status != 0 or
  // a signal Myriad did not send), if any; `skip(process)` leaves some out (those Myriad
  // told the run had ended, whose exit is a consequence).
  const ProcessEnd* first_failure(const std::function<bool(int)>& skip = {}) const;
  // The status `myriad run` exits with: the first failure's, exactly (128 + N for signal N),
  // else 124 on a timeout, 128 + N when stopped by signal N, else 0.
  int exit_status(const std::function<bool(int)>& skip = {}) const;
};

// "rank 1 (pid 42) exited with status 3", "mpirun (pid 42) was killed by signal 9 (SIGKILL)".
std::string DescribeEnd(const ProcessEnd& end);

// Starts the processes and returns once all have ended. `on_exit(end)` is called (from a
// monitor thread) as each one ends, so the live server can close its ranks.
Result<LaunchResult> Launch(const LaunchOptions& options,
                            std::function<void(const ProcessEnd&)> on_exit);

// The environment variables one process gets (besides the inherited ones), for tests/docs.
std::map<std::string, std::string> ProcessEnvironment(const LaunchOptions& options, int process,
                                                      int master_port);

}  // namespace myriad::emulator
