// Library models (docs/kernel-timing.md "Library models").
#include "timing/library_model.h"

#include <algorithm>
#include <cmath>

namespace myriad::emulator::timing {
namespace {

// Output tile candidates, largest first; the larger side runs along the larger of M and N.
// cuBLAS's bf16 kernels on sm80 and sm90 name these CTA tiles (e.g. "..._256x128_..." on
// Ampere, "tilesize128x256x64" on Hopper) and its heuristics move to the smaller one when
// the large tiles would leave SMs idle.
struct Tile {
  std::int64_t major, minor;
};
constexpr Tile kTiles[] = {{256, 128}, {128, 128}, {128, 64}, {64, 64}};

// For a >= 0, b > 0, without overflowing near INT64_MAX.
std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// Beyond this many output tiles a GEMM runs so many waves that the last one's fill no longer
// matters (and products of tile counts could overflow): its wave efficiency is 1.
constexpr std::int64_t kManyTiles = std::int64_t{1} << 50;

// A copy: fixed latency plus bytes at the link's rate.
double CopySeconds(std::uint64_t bytes, double bandwidth) {
  return kCopyLatencySeconds + static_cast<double>(bytes) / bandwidth;
}

// A memset: a kernel that only writes.
double WriteSeconds(std::uint64_t bytes, double bandwidth, const netmodel::GpuSpec& gpu) {
  return gpu.kernel_floor + static_cast<double>(bytes) / bandwidth;
}

}  // namespace

SimTime SecondsToSim(double seconds) {
  return ClampedPicos(seconds * static_cast<double>(kPicosPerSecond));
}

double GemmPeakFlops(DataType dtype, const netmodel::GpuSpec& gpu) {
  switch (dtype) {
    case DataType::kBfloat16:
    case DataType::kFloat16:
      // FP16 and BF16 tensor-core rates are equal on A100, H100/H200 and B200 datasheets.
      return gpu.bf16_flops;
    case DataType::kFloat8e4m3:
    case DataType::kFloat8e5m2:
      // No FP8 tensor cores (A100): the framework upcasts, so the GEMM runs at BF16 rate.
      return gpu.fp8_flops > 0 ? gpu.fp8_flops : gpu.bf16_flops;
    case DataType::kInt8:
    case DataType::kUint8:
      // Dense INT8 equals FP8 on H100 (1979 TOPS) and B200 (4.5 POPS) datasheets, and is
      // twice BF16 on A100 (624 vs 312 TOPS), which has no FP8.
      return gpu.fp8_flops > 0 ? gpu.fp8_flops : 2 * gpu.bf16_flops;
    case DataType::kFloat32:
      // cublasSgemm's default math mode (CUBLAS_DEFAULT_MATH) runs FP32 on CUDA cores; TF32
      // needs CUBLAS_TF32_TENSOR_OP_MATH or NVIDIA_TF32_OVERRIDE, and PyTorch leaves it off
      // for matmuls by default. The catalog has no TF32 figure either.
      return gpu.fp32_flops;
    case DataType::kTfloat32:
      // TF32 tensor cores run at half the BF16 rate (A100 156 of 312, H100 SXM 494 of 989
      // TFLOP/s dense in their datasheets: kTf32PerBf16).
      return gpu.bf16_flops * kTf32PerBf16;
    case DataType::kFloat64:
      // FP64 on CUDA cores is half the FP32 rate on A100 (9.7 of 19.5) and H100 (33.5 of
      // 66.9) datasheets; DMMA tensor cores would double it and are not in the catalog.
      return gpu.fp32_flops / 2;
    case DataType::kInt32:
    case DataType::kUint32:
    case DataType::kInt64:
    case DataType::kUint64:
      // No tensor-core path: assumed to run at the FP32 CUDA-core rate.
      return gpu.fp32_flops;
  }
  return gpu.fp32_flops;
}

GemmEstimate EstimateGemm(const GemmShape& gemm, const netmodel::GpuSpec& gpu) {
  GemmEstimate e;
  const std::int64_t m = std::max<std::int64_t>(gemm.m, 0);
  const std::int64_t n = std::max<std::int64_t>(gemm.n, 0);
  const std::int64_t k = std::max<std::int64_t>(gemm.k, 0);
  const std::int64_t batch = std::max<std::int64_t>(gemm.batch, 1);
  const std::int64_t sms = std::max(gpu.sm_count, 1);
  const auto md = static_cast<double>(m), nd = static_cast<double>(n), kd = static_cast<double>(k);
  const auto bd = static_cast<double>(batch);
  const double element = SizeOf(gemm.dtype);
  // FP8 products are written as BF16, as cuBLASLt and the FP8 libraries do by default.
  const double out_element = element < 2 ? 2 : element;
  const double stream_bandwidth = gpu.hbm_bandwidth * gpu.hbm_efficiency;

  e.flops = 2 * md * nd * kd * bd;
  e.peak = GemmPeakFlops(gemm.dtype, gpu);
  e.overhead_s = kGemmFixedSeconds;
  const double bytes = ((md * kd + kd * nd) * element + md * nd * out_element) * bd;
  e.memory_s = bytes / stream_bandwidth;

  if (m > 0 && n > 0 && k > 0 && e.peak > 0) {
    // The candidate with the shortest time wins, as a heuristic that knows the wave count
    // would pick it; ties keep the larger tile.
    double best = -1;
    const double sm_rate = e.peak * kGemmCeiling *
                           (PromotesFp8Sums(gemm, gpu) ? kHopperFp8PromotedRate : 1.0) /
                           static_cast<double>(sms);
    // An SM's share of the streaming bandwidth, for its tiles' output.
    const double sm_stream = stream_bandwidth / static_cast<double>(sms);
    for (const Tile& tile : kTiles) {
      const std::int64_t tm = m >= n ? tile.major : tile.minor;
      const std::int64_t tn = m >= n ? tile.minor : tile.major;
      std::int64_t tiles = 0;
      const bool many = __builtin_mul_overflow(CeilDiv(m, tm), CeilDiv(n, tn), &tiles) ||
                        __builtin_mul_overflow(tiles, batch, &tiles) || tiles > kManyTiles;
      std::int64_t split = 1;
      if (!many && tiles < sms)
        split = std::max<std::int64_t>(1, std::min(sms / tiles, k / kGemmMinSplitK));
      const std::int64_t units = many ? kManyTiles : tiles * split;
      const double waves = many ? static_cast<double>(units) / static_cast<double>(sms)
                                : static_cast<double>(CeilDiv(units, sms));
      const auto tmd = static_cast<double>(tm), tnd = static_cast<double>(tn);
      // Operands: every K step loads a (tm + tn)-element slice for 2 tm tn FLOPs. The L2
      // feeds tensor cores at the ceiling for 128x128 tiles; smaller tiles reuse each loaded
      // element less and run slower in proportion (CUDA-core GEMMs are too slow to notice).
      const double reuse = tmd * tnd / (tmd + tnd);
      const double operand_factor =
          element > 2 ? 1.0 : std::min(1.0, reuse / kGemmReferenceTileReuse);
      const double k_split = kd / static_cast<double>(split);
      const double main_s = 2 * tmd * tnd * k_split / (sm_rate * operand_factor);
      // The tile's output (fp32 partial sums when K is split) leaves at the SM's share of
      // the bandwidth, while the SM's next tile runs (Hopper's persistent kernels store it
      // with TMA from shared memory): a tile takes the longer of the two.
      const double epilogue_s = tmd * tnd * (split > 1 ? 4.0 : out_element) / sm_stream;
      const double tile_s =
          std::max(main_s, epilogue_s) + kGemmEpilogueExposed * std::min(main_s, epilogue_s);
      double compute = waves * tile_s;
      // Stream-K (CUTLASS's and cuBLAS's Hopper schedulers): the whole waves run as above and
      // the last, partial wave's tiles are split along K over every SM, each split tile then
      // summed from fp32 partials (written by one SM, read by another).
      bool stream_k = false;
      if (!many && split == 1 && tiles > sms && tiles % sms != 0) {
        const double whole = static_cast<double>(tiles / sms);
        const double rest = static_cast<double>(tiles % sms) / static_cast<double>(sms);
        const double fixup = 2 * tmd * tnd * 4.0 / sm_stream;
        const double streamed = whole * tile_s + rest * (main_s + fixup) + epilogue_s;
        if (streamed < compute) {
          compute = streamed;
          stream_k = true;
        }
      }
      // Split-K adds a pass that reads the partial sums and writes the product.
      const double reduce =
          split > 1
              ? md * nd * bd * (4.0 * static_cast<double>(split) + out_element) / stream_bandwidth
              : 0;
      if (best < 0 || compute + reduce < best) {
        best = compute + reduce;
        e.tile_m = tm;
        e.tile_n = tn;
        e.split_k = split;
        e.stream_k = stream_k;
        e.work_units = units;
        e.wave = many ? 1.0 : static_cast<double>(units) / (waves * static_cast<double>(sms));
        e.tile_fill =
            md * nd /
            (static_cast<double>(CeilDiv(m, tm)) * tmd * static_cast<double>(CeilDiv(n, tn)) * tnd);
        e.operand_factor = operand_factor;
        e.k_factor = main_s / tile_s;
        e.reduce_s = reduce;
        e.compute_s = compute + reduce;
      }
    }
    e.efficiency = e.flops / (e.peak * e.compute_s);
  }
  e.seconds = std::max(e.compute_s, e.memory_s) + e.overhead_s;
  return e;
}

double CopyBandwidth(MemcpyKind kind, const netmodel::Cluster& cluster) {
  double bandwidth = 0;
  switch (kind) {
    case MemcpyKind::kHostToDevice:
    case MemcpyKind::kDeviceToHost:
      bandwidth = netmodel::PcieX16Bandwidth(cluster.gpu.pcie_generation) * kPcieEfficiency;
      break;
    case MemcpyKind::kDeviceToDevice:
      // Every byte is read and written, so the copy moves at half the streaming rate.
      bandwidth = cluster.gpu.hbm_bandwidth / 2 * cluster.gpu.hbm_efficiency;
      break;
    case MemcpyKind::kPeer:
      // Over the scale-up fabric at its data rate (NVLink, or PCIe for kind = "pcie").
      bandwidth = cluster.scale_up.data_bandwidth();
      if (bandwidth <= 0) {
        bandwidth = netmodel::PcieX16Bandwidth(cluster.gpu.pcie_generation) * kPcieEfficiency;
      }
      break;
  }
  return bandwidth > 0 ? bandwidth : 0;
}

std::optional<double> MemcpySeconds(MemcpyKind kind, std::uint64_t bytes,
                                    const netmodel::Cluster& cluster) {
  const double bandwidth = CopyBandwidth(kind, cluster);
  if (bandwidth == 0) return std::nullopt;
  return CopySeconds(bytes, bandwidth);
}

double MemsetSeconds(std::uint64_t bytes, const netmodel::GpuSpec& gpu) {
  return WriteSeconds(bytes, gpu.hbm_bandwidth * gpu.hbm_efficiency, gpu);
}

LibraryModelProvider::LibraryModelProvider(const netmodel::Cluster& cluster) : gpu_(cluster.gpu) {
  // The rates are fixed for the run; caching them keeps a copy's Duration to one division.
  for (int kind = 0; kind < 4; ++kind) {
    copy_bandwidth_[kind] = CopyBandwidth(static_cast<MemcpyKind>(kind), cluster);
  }
  memset_bandwidth_ = cluster.gpu.hbm_bandwidth * cluster.gpu.hbm_efficiency;
}

AttentionKernel ResolveAttentionKernel(AttentionKernel kernel, const netmodel::GpuSpec& gpu) {
  const bool hopper_or_later = gpu.compute_capability_major >= 9;
  switch (kernel) {
    case AttentionKernel::kDefault:
      return hopper_or_later ? AttentionKernel::kCudnn : AttentionKernel::kFlash2;
    case AttentionKernel::kFlash3:
      // FlashAttention-3 is written for Hopper (sm90) alone.
      if (gpu.compute_capability_major == 9) return kernel;
      return hopper_or_later ? AttentionKernel::kCudnn : AttentionKernel::kFlash2;
    default:
      return kernel;
  }
}

const AttentionTraits& TraitsOf(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kFlash3:
      return kFlash3Traits;
    case AttentionKernel::kCudnn:
      return kCudnnTraits;
    default:
      return kFlash2Traits;
  }
}

AttentionEstimate EstimateAttention(const AttentionShape& a, const netmodel::GpuSpec& gpu) {
  AttentionEstimate e;
  e.kernel = ResolveAttentionKernel(a.kernel, gpu);
  const AttentionTraits& t = TraitsOf(e.kernel);
  const auto bd = static_cast<double>(a.batch), hd = static_cast<double>(a.heads);
  const auto sq = static_cast<double>(a.seq_q), skv = static_cast<double>(a.seq_kv);
  const auto d = static_cast<double>(a.head_dim);
  e.flops = 4.0 * bd * hd * sq * skv * d;
  if (a.causal) e.flops /= 2;
  if (a.backward) e.flops *= kAttentionBackwardFactor;
  // An FP8 backward runs no faster than a BF16 one (kernels.md 2.4: cuDNN's FP8 backward
  // reaches 370-674 TFLOP/s on H200 against 541-612 for BF16): its products are timed at the
  // BF16 rate.
  e.peak = GemmPeakFlops(a.backward && IsFp8(a.dtype) ? DataType::kBfloat16 : a.dtype, gpu);
  // The implementation's tensor-core efficiency; FlashAttention-2's Ampere instructions
  // (mma.sync) do not reach Hopper's wgmma rate.
  e.ceiling = a.backward ? t.ceiling_backward : t.ceiling_forward;
  if (t.legacy_mma && gpu.compute_capability_major >= 9) e.ceiling *= kLegacyMmaOnHopper;
  // Softmax: one exponential per score on the SFUs against 4 d tensor FLOPs; the part the
  // implementation does not overlap with its matrix products costs tensor time.
  // FP8's doubled tensor rate meets the same SFUs: its softmax weighs twice as much.
  const double sfu_ratio =
      TensorFlopsPerClockPerSm(gpu) * (e.peak / gpu.bf16_flops) / kExpPerClockPerSm;
  const double exposed = a.backward ? t.exp_exposed_backward : t.exp_exposed_forward;
  e.softmax_factor = 4 * d / (4 * d + exposed * sfu_ratio);
  // Each block of queries pays a fixed cost (loading Q, the last rescale, storing O) worth
  // `setup` keys; a causal block sees on average half the keys and computes its diagonal
  // block whole, half of it masked.
  const double keys = a.causal ? std::max(1.0, skv - sq / 2) : skv;
  const double setup = a.backward ? t.setup_keys_backward : t.setup_keys_forward;
  e.length_factor = keys / (keys + setup + (a.causal ? kAttentionBlock / 2 : 0));
  // Too few blocks of queries to give every SM one leaves SMs idle.
  const double blocks = bd * hd * std::ceil(sq / kAttentionBlock);
  e.fill = std::min(1.0, blocks / static_cast<double>(std::max(gpu.sm_count, 1)));
  e.efficiency = e.ceiling * e.softmax_factor * e.length_factor * e.fill;
  const double compute = e.flops / (e.peak * e.efficiency);
  // Q and O are batch x heads x seq_q x head_dim, K and V batch x heads x seq_kv x head_dim.
  const double bytes = 2.0 * bd * hd * d * (sq + skv) * SizeOf(a.dtype) * (a.backward ? 2 : 1);
  const double memory = bytes / (gpu.hbm_bandwidth * gpu.hbm_efficiency);
  e.seconds = std::max(compute, memory) + gpu.kernel_floor;
  return e;
}

double AttentionSeconds(const AttentionShape& a, const netmodel::GpuSpec& gpu) {
  return EstimateAttention(a, gpu).seconds;
}

double TensorFlopsPerClockPerSm(const netmodel::GpuSpec& gpu) {
  // Dense BF16 FLOPs per clock per SM: Ampere 2048 (A100: 312 TFLOP/s = 108 SMs x 2048 x
  // 1.41 GHz), Hopper 4096 (H100: 989.4 = 132 x 4096 x 1.83 GHz), Blackwell 8192 (B200: 2250
  // = 148 x 8192 x 1.86 GHz).
  if (gpu.compute_capability_major >= 10) return 8192;
  if (gpu.compute_capability_major >= 9) return 4096;
  return 2048;
}

double StreamingKernelSeconds(std::uint64_t bytes, const netmodel::GpuSpec& gpu) {
  return static_cast<double>(bytes) / (gpu.hbm_bandwidth * gpu.hbm_efficiency) + gpu.kernel_floor;
}
std::optional<SimTime> LibraryModelProvider::Duration(const Op& op, const NameTable&) const {
  double seconds = 0;
  switch (op.kind) {
    case OpKind::kKernel:
      if (op.gemm.m > 0) {
        seconds = EstimateGemm(op.gemm, gpu_).seconds;
      } else if (op.attention.batch > 0) {
        seconds = AttentionSeconds(op.attention, gpu_);
      } else if (op.bytes > 0 && !op.bytes_guessed && !op.counts.counted) {
        // guesses: LaunchGuessProvider; counted kernels: CodeCountsProvider
        seconds = StreamingKernelSeconds(op.bytes, gpu_);
      } else {
        return std::nullopt;
      }
      break;
    case OpKind::kMemcpy: {
      const double bandwidth = copy_bandwidth_[static_cast<int>(op.copy_kind)];
      if (bandwidth == 0) return std::nullopt;
      seconds = CopySeconds(op.bytes, bandwidth);
      break;
    }
    case OpKind::kMemset:
      if (!(memset_bandwidth_ > 0)) return std::nullopt;
      seconds = WriteSeconds(op.bytes, memset_bandwidth_, gpu_);
      break;
    default:
      return std::nullopt;
  }
  if (!std::isfinite(seconds)) return std::nullopt;
  return SecondsToSim(seconds);
}

}  // namespace myriad::emulator::timing
