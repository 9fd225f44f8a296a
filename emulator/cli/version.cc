// `myriad --version`: Myriad's release and what its models follow.
#include <fmt/format.h>

#include "cli/commands.h"
#include "myriad/netmodel/cluster.h"

namespace myriad::cli {

std::string VersionText() {
  const int nccl = netmodel::kDefaultNcclVersion;
  return fmt::format(
      "myriad {}\n"
      "  collective model: NCCL {}.{}.{}'s algorithms and tuning constants by default "
      "([cluster] nccl_version)\n"
      "  shims: CUDA runtime 13, cuBLAS 13, NCCL 2 (the SONAMEs a CUDA 13 program links)\n",
      MYRIAD_VERSION, nccl / 10000, nccl / 100 % 100, nccl % 100);
}

}  // namespace myriad::cli
