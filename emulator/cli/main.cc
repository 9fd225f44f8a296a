// `myriad`: the command-line entry point. Dispatches to one subcommand.
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

constexpr const char* kUsage =
    "usage: myriad <command> [args]\n"
    "\n"
    "commands:\n"
    "  check SCENARIO                   print the resolved cluster and where each number came "
    "from\n"
    "  collective SCENARIO --op OP ...  predict NCCL collectives, printed like nccl-tests\n"
    "  run SCENARIO -- COMMAND ARGS     run a CUDA/NCCL program on the scenario's virtual GPUs\n"
    "  replay TRACE --scenario SCENARIO run a trace of per-rank ops on a cluster in virtual time\n"
    "  simulate SCENARIO                a synthetic training iteration of the scenario's workload\n"
    "  trace convert IN OUT             convert a trace between JSON Lines and binary\n"
    "  gate --baseline A --current B    compare two reports; exit 1 on a regression\n"
    "  profile import TRACE -o OUT.kdb  kernel profiles from a real GPU's traces\n"
    "  sweep SWEEP.toml [--jobs N]      run a grid of variations of one scenario (--slurm: as a\n"
    "                                   Slurm job array)\n"
    "  help COMMAND                     describe one command (as `myriad COMMAND --help`)\n"
    "  --version                        print Myriad's version and the NCCL it models\n";

// Each command, by name, for dispatch and for `myriad help COMMAND`.
using Command = int (*)(const std::vector<std::string>&, std::ostream&, std::ostream&);
Command Find(const std::string& name) {
  namespace cli = myriad::cli;
  if (name == "check") return cli::RunCheck;
  if (name == "collective") return cli::RunCollective;
  if (name == "run") return cli::RunRun;
  if (name == "simulate") return cli::RunSimulate;
  if (name == "replay") return cli::RunReplay;
  if (name == "trace") return cli::RunTrace;
  if (name == "gate") return cli::RunGate;
  if (name == "profile") return cli::RunProfile;
  if (name == "sweep") return cli::RunSweep;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  myriad::cli::InstallLastResort();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" ||
      (args[0] == "help" && args.size() == 1)) {
    (args.empty() ? std::cerr : std::cout) << kUsage;
    return args.empty() ? myriad::cli::kExitBadInput : myriad::cli::kExitOk;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "--version" || command == "version") {
    std::cout << myriad::cli::VersionText();
    return myriad::cli::kExitOk;
  }
  if (command == "help") {
    if (args.size() != 1) {
      std::cerr << "myriad help: error: name one command\n" << kUsage;
      return myriad::cli::kExitBadInput;
    }
    if (Command help = Find(args[0])) return help({"--help"}, std::cout, std::cerr);
    std::cerr << "myriad help: error: unknown command '" << args[0] << "'\n" << kUsage;
    return myriad::cli::kExitBadInput;
  }
  if (Command run = Find(command)) return run(args, std::cout, std::cerr);
  std::cerr << "myriad: error: unknown command '" << command << "'\n" << kUsage;
  return myriad::cli::kExitBadInput;
}
