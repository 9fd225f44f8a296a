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
    "\n"
    "`myriad <command> --help` describes one command.\n";

}  // namespace

int main(int argc, char** argv) {
  myriad::cli::InstallLastResort();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    (args.empty() ? std::cerr : std::cout) << kUsage;
    return args.empty() ? myriad::cli::kExitBadInput : myriad::cli::kExitOk;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "check") return myriad::cli::RunCheck(args, std::cout, std::cerr);
  if (command == "collective") return myriad::cli::RunCollective(args, std::cout, std::cerr);
  if (command == "run") return myriad::cli::RunRun(args, std::cout, std::cerr);
  if (command == "simulate") return myriad::cli::RunSimulate(args, std::cout, std::cerr);
  if (command == "replay") return myriad::cli::RunReplay(args, std::cout, std::cerr);
  if (command == "trace") return myriad::cli::RunTrace(args, std::cout, std::cerr);
  if (command == "gate") return myriad::cli::RunGate(args, std::cout, std::cerr);
  if (command == "profile") return myriad::cli::RunProfile(args, std::cout, std::cerr);
  std::cerr << "myriad: error: unknown command '" << command << "'\n" << kUsage;
  return myriad::cli::kExitBadInput;
}
