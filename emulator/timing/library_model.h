// Library models: cuBLAS GEMMs from M, N, K and dtype; memcpy and memset from bandwidths.
// Every formula and constant is listed, with its source, in docs/kernel-timing.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "myriad/emulator/kernel_timing.h"
#include "myriad/emulator/op.h"
#include "myriad/netmodel/cluster.h"
#include "myriad/netmodel/hardware.h"

namespace myriad::emulator::timing {

// Highest fraction of the dense tensor-core peak a GEMM's main loop reaches on an SM. With
// the model below, a bf16 8192^3 GEMM lands at 770-780 TFLOP/s on H100 and H200, within the
// 770-800 TFLOP/s measured on H200 (shared/reference/hardware.md) and 797.5 on H100
// (kernels.md 1.2).
inline constexpr double kGemmCeiling = 0.83;
// A tile's operand reuse, tm tn / (tm + tn) elements of output per element loaded per K
// step, at which the L2 still feeds the tensor cores at the ceiling: 128x128's (64). Assumed:
// the L2 (with TMA multicast over a cluster) is sized for the tiles cuBLAS favours; smaller
// tiles, which it picks only when the larger leave SMs idle, run slower in proportion
// (kernels.md 1.3: the 128x64 and 64x64 kernels of small-M products reach 112-275 TFLOP/s).
inline constexpr double kGemmReferenceTileReuse = 64;
// Split-K: when the output tiles cannot fill the SMs, K is split so that each split keeps at
// least this much of K. Assumed: below it the partial-sum reduction costs what it saves.
inline constexpr std::int64_t kGemmMinSplitK = 1024;
// Fixed device-side cost of a GEMM kernel: launch, tile scheduling, the pipeline's first
// loads and the last tile's epilogue. kernels.md 1.3 and 3.6: cuBLAS/CUTLASS GEMMs of
// M <= 141 on H100 take 6.1-8.2 us however small their work (about 1.5-3 us of it by this
// model's main loop and output), and B200's smallest (888x128x2880) 6.5 us.
inline constexpr double kGemmFixedSeconds = 4.5e-6;
// Part of the shorter of a tile's main loop and its output store that is not hidden behind
// the longer. Assumed: cuBLAS's Hopper kernels come as "ping-pong" (one warp group stores
// while the other computes: hidden) and "cooperative" (both compute, then store: exposed),
// and it picks either; the traces of kernels.md 1.3 (K = 768-1024 products at 520-760
// TFLOP/s) sit between the two.
inline constexpr double kGemmEpilogueExposed = 0.5;
// The H100 streaming fraction the PyTorch kernel families' efficiencies were measured
// against (GpuSpec::hbm_efficiency of h100-sxm): they scale by the GPU's own over it.
inline constexpr double kH100HbmEfficiency = 0.9;
// Shortest device-side duration of a library kernel (grid launch, tile prologue, epilogue
// write-back, completion). Assumed, not measured: a GPU run should replace it.
inline constexpr double kKernelFloorSeconds = 2e-6;
// Fraction of the PCIe x16 per-direction rate that pinned-memory copies reach. Assumed from
// the usual bandwidthTest results (about 25 of 31.5 GB/s on Gen4, 50-55 of 63 GB/s on Gen5).
inline constexpr double kPcieEfficiency = 0.8;
// Fixed cost of a copy: DMA engine setup and, for host copies, a PCIe round trip. Assumed.
inline constexpr double kCopyLatencySeconds = 2e-6;

// Fused attention (FlashAttention style): the highest fraction of the tensor-core peak it
// reaches on long sequences. FlashAttention-2 reports 50-73% of A100's peak for the forward
// pass and somewhat less for the backward (Dao, "FlashAttention-2", 2023); FlashAttention-3
// about 75% of H100's. Assumed one figure for both passes and all GPUs until measured.
inline constexpr double kAttentionCeiling = 0.6;
// Key/value length at which the attention efficiency is half its ceiling: short sequences
// leave the K/V loop too short to hide loads. Assumed (a few 128-key tiles).
inline constexpr double kAttentionSeqHalf = 256;
// The backward pass does 2.5x the forward's FLOPs (five matrix products against two, with the
// forward's recomputed; FlashAttention-2 paper).
inline constexpr double kAttentionBackwardFactor = 2.5;

// Tensor-core (or CUDA-core) rate a GEMM of `dtype` runs at on `gpu`, FLOP/s.
double GemmPeakFlops(DataType dtype, const netmodel::GpuSpec& gpu);

// The GEMM model's terms, for tests and reports.
struct GemmEstimate {
  double flops = 0;  // 2 m n k batch
  double peak = 0;   // GemmPeakFlops
  std::int64_t tile_m = 0, tile_n = 0;
  std::int64_t split_k = 1;
  bool stream_k = false;        // the last partial wave split along K over every SM
  std::int64_t work_units = 0;  // tiles x batch x split_k
  double wave = 0;              // work_units / (waves x SMs)
  double tile_fill = 0;         // useful fraction of the padded tiles' area
  double operand_factor = 0;    // main-loop rate the L2 allows, as a fraction of the ceiling
  double k_factor = 0;          // a tile's main loop / (main loop + output epilogue)
  double efficiency = 0;        // flops / (peak x compute_s)
  double reduce_s = 0;          // split-K's reduction pass
  double compute_s = 0;         // waves x (main loop + epilogue) + reduce_s
  double memory_s = 0;
  double overhead_s = 0;
  double seconds = 0;  // max(compute, memory) + overhead
};
GemmEstimate EstimateGemm(const GemmShape& gemm, const netmodel::GpuSpec& gpu);

// Fused attention: flops = 4 x batch x heads x seq_q x seq_kv x head_dim (halved when causal,
// x kAttentionBackwardFactor for the backward), at the tensor-core peak x kAttentionCeiling x
// seq_kv / (seq_kv + kAttentionSeqHalf), no faster than reading Q, K, V and writing O once.
double AttentionSeconds(const AttentionShape& attention, const netmodel::GpuSpec& gpu);
// A kernel that only streams memory (element-wise, normalisation): bytes at the HBM
// bandwidth x GpuSpec::hbm_efficiency, plus the kernel floor.
double StreamingKernelSeconds(std::uint64_t bytes, const netmodel::GpuSpec& gpu);

// Data rate of a copy of `kind` on `cluster`, bytes/s; 0 when the cluster has no figure for
// the link (a PCIe generation the catalog does not know).
double CopyBandwidth(MemcpyKind kind, const netmodel::Cluster& cluster);
// Seconds for a copy of `bytes`: kCopyLatencySeconds + bytes / CopyBandwidth; nullopt when
// the rate is 0.
std::optional<double> MemcpySeconds(MemcpyKind kind, std::uint64_t bytes,
                                    const netmodel::Cluster& cluster);
double MemsetSeconds(std::uint64_t bytes, const netmodel::GpuSpec& gpu);

// Provider "library": GEMM kernels (op.gemm.m > 0), attention kernels (op.attention.batch >
// 0), memory-bound kernels (only op.bytes > 0), memcpy and memset ops.
class LibraryModelProvider : public DurationProvider {
 public:
  explicit LibraryModelProvider(const netmodel::Cluster& cluster);
  std::string_view name() const override { return "library"; }
  std::optional<SimTime> Duration(const Op& op, const NameTable& names) const override;

 private:
  netmodel::GpuSpec gpu_;
  double copy_bandwidth_[4] = {};  // bytes/s by MemcpyKind (0: no model)
  double memset_bandwidth_ = 0;
};

// Seconds to picoseconds, rounded to nearest.
SimTime SecondsToSim(double seconds);

}  // namespace myriad::emulator::timing
