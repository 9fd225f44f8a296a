// `myriad run --check-fold`: whether a program's data-parallel replicas do alike work, the
// assumption rank folding rests on (docs/run.md, "Folding").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "myriad/emulator/op_source.h"
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

// The first op a mirror would replay wrongly: in `workload` (a recorded unfolded run of
// `ranks` ranks; GPUs a recording holds beyond those went unused), the first rank r from
// live_ranks on whose op stream differs from that of rank r % live_ranks, the rank its mirror
// would replay, in the work an op does (kind, kernel name, launch shape, bytes, counts, GEMM
// and attention shapes, collective and size; not host durations, which the figures compare):
// "rank 3's op 2 (kernel ...): bytes 8192 where rank 1 has 4096". Nothing when they are
// alike; an error when the trace cannot be read.
Result<std::optional<std::string>> FirstUnlikeOp(emulator::Workload& workload, int live_ranks,
                                                 int ranks);

// Runs the program as two replicas, once with the second mirrored and once with both as
// processes, and compares every rank's ops (FirstUnlikeOp, on the unfolded run's recording)
// and every rank's figures in the two reports. Ok with a note saying what agreed; an error
// naming the first rank and op, or rank and figure, that differ, or the check run that failed
// (its output kept in a file the message names).
Result<std::string> CheckFold(const FoldCheckRun& run);

}  // namespace myriad::cli
