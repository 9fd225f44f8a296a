// Published NCCL figures from shared/reference/collectives.md, used only as tolerance bands
// (tests) and as the "published" column of docs/validation.md. The model never reads them.
#pragma once

#include <cstdint>
#include <vector>

namespace myriad::reference {

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = 1024 * kKiB;
constexpr std::uint64_t kGiB = 1024 * kMiB;

struct Row {
  const char* source;    // where the figure was published
  const char* scenario;  // bundled scenario that models the same hardware
  const char* op;        // myriad collective --op
  int ranks;             // communicator size
  const char* algo;      // NCCL_ALGO in force ("" = automatic)
  std::uint64_t bytes;
  double time_us;     // 0 = not published
  double busbw_gbps;  // 0 = not published
};

inline const std::vector<Row>& CollectiveRows() {
  // One published figure per line reads best as a table.
  // clang-format off
  static const std::vector<Row> rows = {
      // One 8-GPU H100 node, NVLS on (NVIDIA/dgxc-benchmarking nccl/README.md).
      {"dgxc-benchmarking DGX H100", "scenarios/dgx-h100.toml", "allreduce", 8, "", 8, 13.0, 0},
      {"dgxc-benchmarking DGX H100", "scenarios/dgx-h100.toml", "allreduce", 8, "", kKiB, 16.2, 0},
      {"dgxc-benchmarking DGX H100", "scenarios/dgx-h100.toml", "allreduce", 8, "", 64 * kKiB, 18.9, 6.1},
      {"dgxc-benchmarking DGX H100", "scenarios/dgx-h100.toml", "allreduce", 8, "", kMiB, 26.9, 68},
      {"dgxc-benchmarking DGX H100", "scenarios/dgx-h100.toml", "allreduce", 8, "", 4 * kMiB, 53.8, 136},
      {"dgxc-benchmarking DGX H100", "scenarios/dgx-h100.toml", "allreduce", 8, "", 16 * kMiB, 123, 239},
      {"dgxc-benchmarking DGX H100", "scenarios/dgx-h100.toml", "allreduce", 8, "", 64 * kMiB, 325, 362},
      {"dgxc-benchmarking DGX H100", "scenarios/dgx-h100.toml", "allreduce", 8, "", 256 * kMiB, 1113, 422},
      {"dgxc-benchmarking DGX H100", "scenarios/dgx-h100.toml", "allreduce", 8, "", kGiB, 4016, 468},
      {"dgxc-benchmarking DGX H100", "scenarios/dgx-h100.toml", "allreduce", 8, "", 8 * kGiB, 31307, 480},
      // Azure ND H100 v5, NCCL 2.18 (Azure/AI-benchmarking-guide).
      {"Azure ND H100 v5", "scenarios/dgx-h100.toml", "allreduce", 8, "", kMiB, 0, 43.7},
      {"Azure ND H100 v5", "scenarios/dgx-h100.toml", "allreduce", 8, "", 16 * kMiB, 0, 234},
      {"Azure ND H100 v5", "scenarios/dgx-h100.toml", "allreduce", 8, "", 128 * kMiB, 0, 401},
      {"Azure ND H100 v5", "scenarios/dgx-h100.toml", "allreduce", 8, "", kGiB, 0, 466},
      {"Azure ND H100 v5", "scenarios/dgx-h100.toml", "allreduce", 8, "", 8 * kGiB, 0, 479},
      // H200 8-GPU (nccl-tests issue 272).
      {"nccl-tests issue 272 (H200)", "scenarios/h200-x128.toml", "allreduce", 8, "", 8 * kGiB, 0, 475},
      // Ring, NVLS off, and other collectives: 365-370 GB/s (nccl issue 1455, nccl-tests 212).
      {"nccl 1455 / nccl-tests 212", "scenarios/dgx-h100.toml", "allreduce", 8, "ring", 8 * kGiB, 0, 367},
      {"nccl 1455 / nccl-tests 212", "scenarios/dgx-h100.toml", "allgather", 8, "ring", 8 * kGiB, 0, 367},
      {"nccl 1455 / nccl-tests 212", "scenarios/dgx-h100.toml", "reducescatter", 8, "ring", 8 * kGiB, 0, 367},
      {"nccl 1455 / nccl-tests 212", "scenarios/dgx-h100.toml", "allgather", 8, "", 8 * kGiB, 0, 367},
      {"nccl 1455 / nccl-tests 212", "scenarios/dgx-h100.toml", "reducescatter", 8, "", 8 * kGiB, 0, 367},
      // NVLS AllReduce busbw by GPU count (nccl issue 1455).
      {"nccl issue 1455 (NVLS, 2 GPUs)", "scenarios/dgx-h100.toml", "allreduce", 2, "", 8 * kGiB, 0, 370},
      {"nccl issue 1455 (NVLS, 4 GPUs)", "scenarios/dgx-h100.toml", "allreduce", 4, "", 8 * kGiB, 0, 370},
      {"nccl issue 1455 (NVLS, 5 GPUs)", "scenarios/dgx-h100.toml", "allreduce", 5, "", 8 * kGiB, 0, 420},
      {"nccl issue 1455 (NVLS, 6 GPUs)", "scenarios/dgx-h100.toml", "allreduce", 6, "", 8 * kGiB, 0, 440},
      {"nccl issue 1455 (NVLS, 7 GPUs)", "scenarios/dgx-h100.toml", "allreduce", 7, "", 8 * kGiB, 0, 460},
      {"nccl issue 1455 (NVLS, 8 GPUs)", "scenarios/dgx-h100.toml", "allreduce", 8, "", 8 * kGiB, 0, 480},
      // 2 x H100 NVLS at 128 B (nccl issue 1259).
      {"nccl issue 1259 (2 GPUs)", "scenarios/dgx-h100.toml", "allreduce", 2, "", 128, 5.6, 0},
      // One 8-GPU A100 node (Azure ND A100 v4; nccl-tests issues 149, 178 report 200-208).
      {"Azure ND A100 v4", "scenarios/dgx-a100.toml", "allreduce", 8, "", kMiB, 0, 36},
      {"Azure ND A100 v4", "scenarios/dgx-a100.toml", "allreduce", 8, "", 16 * kMiB, 0, 109},
      {"Azure ND A100 v4", "scenarios/dgx-a100.toml", "allreduce", 8, "", 128 * kMiB, 0, 174},
      {"Azure ND A100 v4", "scenarios/dgx-a100.toml", "allreduce", 8, "", kGiB, 0, 228},
      {"Azure ND A100 v4", "scenarios/dgx-a100.toml", "allreduce", 8, "", 8 * kGiB, 0, 231.6},
      // A 400G ConnectX-7 reaches 46-49 GB/s (nccl-tests issues 290, 267): one GPU per node.
      {"nccl-tests 290/267 (CX-7)", "scenarios/h100-x16.toml", "sendrecv", 16, "", 8 * kGiB, 0, 47.5},
      // AllToAll with one NIC per GPU tends to the per-NIC rate (nccl-tests issues 130, 267).
      {"nccl-tests 130/267 (AllToAll)", "scenarios/h100-x128.toml", "alltoall", 1024, "", 8 * kGiB, 0, 47.5},
  };
  // clang-format on
  return rows;
}

}  // namespace myriad::reference
