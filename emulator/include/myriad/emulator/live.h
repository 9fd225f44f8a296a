// Live op sources: processes running under `myriad run` send their CUDA/NCCL calls over a
// Unix socket (interpose/protocol/wire.h); each virtual device of each process is one
// logical rank fed by what its process sends.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "myriad/emulator/op_source.h"
#include "myriad/status.h"

namespace myriad::emulator {

// Which of the cluster's GPUs a process sees: devices 0..visible-1 of the process are GPUs
// first_gpu..first_gpu+visible-1 (its node's, as torchrun, mpirun and Slurm give them).
struct ProcessPlacement {
  int first_gpu = 0;
  int visible = 1;
};

struct LiveOptions {
  // One entry per process. A logical rank is a GPU that a process uses (sends work for);
  // a GPU belongs to the first process that uses it, and no other process may.
  std::vector<ProcessPlacement> placement = {ProcessPlacement{}};
  std::string description = "live processes";
};

// Serves the socket and presents the connected processes as a Workload.
class LiveWorkload : public Workload {
 public:
  // Creates a private directory (mode 0700) with the socket and starts serving it.
  static Result<std::unique_ptr<LiveWorkload>> Start(const LiveOptions& options);
  ~LiveWorkload() override;

  // Path of the socket processes connect to (the launcher puts it in MYRIAD_SOCKET).
  virtual const std::string& socket_path() const = 0;
  // Marks process `p` as gone (the launcher saw it exit): its ranks' streams end once
  // everything it sent has been read.
  virtual void ProcessExited(int process) = 0;
  // The run failed: every connected process is told why (its shim prints it and exits).
  virtual void Abort(const std::string& why) = 0;
  // Ends every rank now with `why` as the engine's error (a timeout, a signal): the engine
  // stops waiting for processes that may never send anything again.
  virtual void Shutdown(const std::string& why) = 0;
  // Whether `process` was told the run had ended (after Stop()): its exit is a consequence.
  virtual bool WasTold(int process) const = 0;
  // Bytes the processes copied from device memory to the host (no kernel wrote any of them).
  virtual std::uint64_t bytes_read_back() const = 0;
  // Stops serving; pending and future replies are dropped.
  virtual void Stop() = 0;
};

}  // namespace myriad::emulator
