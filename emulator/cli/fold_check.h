// `myriad run --check-fold`: whether a program's data-parallel replicas do alike work, the
// assumption rank folding rests on (docs/run.md, "Folding").
#pragma once

#include <string>
#include <vector>

#include "myriad/status.h"

namespace myriad::cli {

// What the two check runs share with the run being checked.
struct FoldCheckRun {
  std::string scenario_path;
  std::vector<std::string> command;
  std::string env;  // torchrun, mpi, slurm
  int live_ranks = 0;
  int devices_per_process = 1;
  std::string mesh_of_two;  // the run's mesh with two data-parallel replicas
  double timeout_seconds = 0;
  std::string shim_dir;
};

// Runs the program as two replicas, once with the second mirrored and once with both as
// processes, and compares every rank's figures in the two reports. Ok with a note saying what
// agreed; an error naming the first rank and figure that differ, or the check run that failed
// (its output kept in a file the message names).
Result<std::string> CheckFold(const FoldCheckRun& run);

}  // namespace myriad::cli
