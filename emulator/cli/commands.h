// The subcommands of `myriad`. Each returns the process exit status:
// 0 success, 1 failure of the thing run, 2 bad input (usage, scenario errors).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace myriad::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
// A bug in Myriad (a fatal signal, an uncaught exception) or memory running out: EX_SOFTWARE.
inline constexpr int kExitInternalError = 70;

// Makes a fatal signal or an uncaught exception end the process with one line on stderr and
// kExitInternalError (cli/last_resort.cc).
void InstallLastResort();

// `myriad --version`: the release (the CMake project's version) and the NCCL it models.
std::string VersionText();

// `myriad check SCENARIO`: prints the resolved cluster and where each number came from.
int RunCheck(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `myriad collective SCENARIO --op OP ...`: nccl-tests-style table of predicted collectives.
int RunCollective(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `myriad replay TRACE --scenario SCENARIO`: runs a recorded or hand-written trace on a cluster.
int RunReplay(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `myriad run SCENARIO -- COMMAND`: an unmodified CUDA/NCCL program on virtual GPUs.
int RunRun(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `myriad simulate SCENARIO`: a synthetic training iteration of the scenario's [workload].
int RunSimulate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `myriad gate --baseline BASE.json --current CURRENT.json`: compares two reports.
int RunGate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `myriad profile import TRACE... -o PROFILE.kdb`, `myriad profile record -- PROGRAM`: kernel
// profiles from a real GPU (docs/kernel-timing.md, "Importing a profile").
int RunProfile(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// `myriad profile record`: the program natively on this machine's GPU, its kernels timed
// (cli/profile_record.cc).
int RecordProfile(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `myriad sweep SWEEP.toml`, `myriad sweep collect DIR`, `myriad sweep point DIR INDEX`: a grid
// of scenario variations through `myriad simulate`, locally or as a Slurm job array.
int RunSweep(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `myriad trace convert IN OUT`: between JSON Lines and the binary trace format.
int RunTrace(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace myriad::cli
