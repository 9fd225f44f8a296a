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
// FP8 on Hopper (compute capability 9.x) without fast accumulation: the tensor cores keep
// FP8 products' sums to about 14 bits of mantissa, so cuBLASLt (by default) and CUTLASS add
// each few K steps' partial sums into FP32 registers on the CUDA cores ("promotion";
// DeepSeek-V3 report, section 3.3.2), and the main loop runs at this fraction of its rate.
// Set from kernels.md 1.1's two H100 SXM rows (mamf-finder, torch.mm and torch._scaled_mm
// with its default use_fast_accum=False): FP8 reaches 70.9% of its dense peak where BF16
// reaches 80.3%, 0.883 of it. Checked by the H200 FP8 row of the same table (73.4%). FP8 with
// fast accumulation runs as BF16 does (kernels.md 1.3, FBGEMM's row-wise FP8 at 500 W: 0.96-
// 1.04 of BF16's fraction of peak); Blackwell accumulates in FP32 and needs no promotion (its
// FP8 rows reach 0.95-0.99 of BF16's fraction).
inline constexpr double kHopperFp8PromotedRate = 70.9 / 80.3;

inline bool IsFp8(DataType t) { return t == DataType::kFloat8e4m3 || t == DataType::kFloat8e5m2; }
// Whether `gpu` promotes FP8 partial sums to FP32 unless asked for fast accumulation (Hopper).
inline bool PromotesFp8Sums(const netmodel::GpuSpec& gpu) {
  return gpu.compute_capability_major == 9;
}
// Whether `gemm`'s main loop runs at kHopperFp8PromotedRate on `gpu`.
inline bool PromotesFp8Sums(const GemmShape& gemm, const netmodel::GpuSpec& gpu) {
  return IsFp8(gemm.dtype) && !gemm.fast_accumulation && PromotesFp8Sums(gpu);
}
// The H100 streaming fraction the PyTorch kernel families' efficiencies were measured
// against (GpuSpec::hbm_efficiency of h100-sxm): they scale by the GPU's own over it.
inline constexpr double kH100HbmEfficiency = 0.9;
// TF32 tensor cores run at half the BF16 rate: A100 156 of 312, H100 SXM 494 of 989 dense
// TFLOP/s in their datasheets.
inline constexpr double kTf32PerBf16 = 0.5;
// Fraction of the PCIe x16 per-direction rate that pinned-memory copies reach. Assumed from
// the usual bandwidthTest results (about 25 of 31.5 GB/s on Gen4, 50-55 of 63 GB/s on Gen5).
inline constexpr double kPcieEfficiency = 0.8;
// Fixed cost of a copy: DMA engine setup and, for host copies, a PCIe round trip. Assumed.
inline constexpr double kCopyLatencySeconds = 2e-6;

// Fused attention, by implementation (docs/kernel-timing.md, "Attention"). Each
// implementation's figures come from its published curves on H100 (kernels.md 2.1-2.4):
// `ceiling` from its long-sequence, head-dim-128 rate; `exp_exposed` from the ratio of its
// head-dim-64 to head-dim-128 rates (the softmax's share grows as head_dim shrinks);
// `setup_keys` from the ratio of its 512-token to 16k-token rates.
struct AttentionTraits {
  double ceiling_forward, ceiling_backward;
  double exp_exposed_forward, exp_exposed_backward;
  double setup_keys_forward, setup_keys_backward;
  bool legacy_mma;  // Ampere's mma.sync instructions, slower on Hopper (kLegacyMmaOnHopper)
};
// FlashAttention-2: forward from kernels.md 2.2 (H100: 324 / 370 TFLOP/s at head dim 64 / 128,
// 16k; 309 at 512), backward from 2.1's forward+backward (338 and 296 at 16k, 248 at 512)
// less that forward; ceilings stated for Ampere, where its instructions run at full rate.
inline constexpr AttentionTraits kFlash2Traits{0.706, 0.629, 0.33, 0.33, 100, 215, true};
// FlashAttention-3 (Hopper): forward from 2.2 (497 / 648 at 16k, 467 at 512, non-causal),
// backward from 2.3 (474 / 561 at 16k, 316 at 512).
inline constexpr AttentionTraits kFlash3Traits{0.951, 0.712, 0.87, 0.45, 195, 419, false};
// cuDNN as the FlashAttention-3 paper measured it on H100 (2024; kernels.md 2.2 and 2.3, head
// dim 128): forward 595 TFLOP/s at 16k and 497 at 512, backward 516 and 305; the backward's
// softmax exposure from its head-dim-64 rates (433 at 16k), the forward's assumed half (its
// head-dim-64 kernel is slower than the mechanism gives). The cuDNN of the published training
// results is of this era; cuDNN 9.19 (2026, 2.4) is up to 18% faster.
inline constexpr AttentionTraits kCudnnTraits{0.756, 0.660, 0.5, 0.475, 105, 375, false};
// FlashAttention-2's rate on Hopper over its rate on Ampere at the same share of peak: its
// H100 forward reaches 0.37 of peak at 16k (2.2), its A100 forward+backward 0.65 (2.1).
inline constexpr double kLegacyMmaOnHopper = 0.62;
// Exponentials per clock per SM (16 SFU lanes per SM on Ampere, Hopper and Blackwell).
inline constexpr double kExpPerClockPerSm = 16;
// Query and key block of the fused kernels (128 x 128 tiles in FA2/FA3 and cuDNN at head
// dim 128).
inline constexpr double kAttentionBlock = 128;
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

// The implementation that runs: the GPU's default for kDefault (cuDNN on Hopper and later,
// FlashAttention-2 before), FlashAttention-3 only on Hopper.
AttentionKernel ResolveAttentionKernel(AttentionKernel kernel, const netmodel::GpuSpec& gpu);
// Dense BF16 tensor FLOPs per clock per SM of the GPU's architecture.
double TensorFlopsPerClockPerSm(const netmodel::GpuSpec& gpu);

// The attention model's terms, for tests and reports.
struct AttentionEstimate {
  AttentionKernel kernel = AttentionKernel::kDefault;  // resolved
  double flops = 0;           // 4 batch heads seq_q seq_kv head_dim (/2 causal, x2.5 bwd)
  double peak = 0;            // GemmPeakFlops(dtype)
  double ceiling = 0;         // the implementation's, x kLegacyMmaOnHopper where it applies
  double softmax_factor = 0;  // 4d / (4d + exp_exposed x tensor FLOPs per exponential)
  double length_factor = 0;   // keys / (keys + setup_keys (+ block / 2 when causal))
  double fill = 0;            // blocks of queries over SMs, at most 1
  double efficiency = 0;      // the product of the four
  double seconds = 0;         // max(compute, memory) + GpuSpec::kernel_floor
};
AttentionEstimate EstimateAttention(const AttentionShape& attention, const netmodel::GpuSpec& gpu);
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
