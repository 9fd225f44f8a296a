// Library models: the GEMM efficiency curve, copies and memsets (docs/kernel-timing.md).
#include "timing/library_model.h"

#include <gtest/gtest.h>

#include "tests/netmodel/test_clusters.h"

namespace myriad::emulator::timing {
namespace {

using netmodel::testing::DgxCluster;

constexpr double kTera = 1e12;

netmodel::GpuSpec Gpu(const char* key) { return netmodel::FindGpu(key).value(); }

GemmShape Gemm(std::int64_t m, std::int64_t n, std::int64_t k, DataType dtype = DataType::kBfloat16,
               std::int64_t batch = 1) {
  return GemmShape{m, n, k, batch, dtype};
}

double EffectiveFlops(const GemmEstimate& e) { return e.flops / e.seconds; }

TEST(AttentionModel, CausalForwardAndBackwardFollowTheFormula) {
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  AttentionShape a;
  a.batch = 1;
  a.heads = 32;
  a.seq_q = a.seq_kv = 4096;
  a.head_dim = 128;
  // The default on Hopper is cuDNN's: its ceiling, the softmax's share (4096 tensor FLOPs per
  // clock per SM against 16 exponentials, half exposed) and a causal block's keys (2048 on
  // average, against 105 of set-up and half a 128-key diagonal block).
  const AttentionEstimate e = EstimateAttention(a, h100);
  EXPECT_EQ(e.kernel, AttentionKernel::kCudnn);
  EXPECT_DOUBLE_EQ(e.flops, 4.0 * 32 * 4096.0 * 4096.0 * 128 / 2);
  EXPECT_DOUBLE_EQ(e.ceiling, kCudnnTraits.ceiling_forward);
  EXPECT_DOUBLE_EQ(e.softmax_factor, 512.0 / (512 + 0.5 * 4096 / 16));
  EXPECT_DOUBLE_EQ(e.length_factor, 2048.0 / (2048 + 105 + 64));
  EXPECT_DOUBLE_EQ(e.fill, 1.0);  // 32 x 32 blocks of queries
  const double forward = e.flops / (989.4e12 * e.efficiency) + 2e-6;
  EXPECT_NEAR(e.seconds, forward, 1e-12);
  // The backward: 2.5 times the FLOPs at its own figures.
  a.backward = true;
  const AttentionEstimate b = EstimateAttention(a, h100);
  EXPECT_DOUBLE_EQ(b.flops, 2.5 * e.flops);
  EXPECT_DOUBLE_EQ(b.length_factor, 2048.0 / (2048 + 375 + 64));
  // Without the mask, twice the work at a better length factor.
  a.backward = false;
  a.causal = false;
  EXPECT_DOUBLE_EQ(EstimateAttention(a, h100).length_factor, 4096.0 / (4096 + 105));
}

TEST(AttentionModel, ImplementationsByGpu) {
  const netmodel::GpuSpec h100 = Gpu("h100-sxm"), a100 = Gpu("a100-sxm-80gb");
  const netmodel::GpuSpec b200 = Gpu("b200");
  EXPECT_EQ(ResolveAttentionKernel(AttentionKernel::kDefault, a100), AttentionKernel::kFlash2);
  EXPECT_EQ(ResolveAttentionKernel(AttentionKernel::kDefault, h100), AttentionKernel::kCudnn);
  EXPECT_EQ(ResolveAttentionKernel(AttentionKernel::kFlash3, h100), AttentionKernel::kFlash3);
  EXPECT_EQ(ResolveAttentionKernel(AttentionKernel::kFlash3, a100), AttentionKernel::kFlash2);
  EXPECT_EQ(ResolveAttentionKernel(AttentionKernel::kFlash3, b200), AttentionKernel::kCudnn);
  // FlashAttention-2's Ampere instructions run slower on Hopper.
  AttentionShape a;
  a.batch = 4;
  a.heads = 16;
  a.seq_q = a.seq_kv = 8192;
  a.head_dim = 128;
  a.kernel = AttentionKernel::kFlash2;
  EXPECT_DOUBLE_EQ(EstimateAttention(a, h100).ceiling,
                   kFlash2Traits.ceiling_forward * kLegacyMmaOnHopper);
  EXPECT_DOUBLE_EQ(EstimateAttention(a, a100).ceiling, kFlash2Traits.ceiling_forward);
  // A smaller head dimension gives the exponentials a larger share.
  const double at128 = EstimateAttention(a, h100).softmax_factor;
  a.head_dim = 64;
  EXPECT_LT(EstimateAttention(a, h100).softmax_factor, at128);
  // Too few blocks of queries for the SMs: one batch, one head, 1024 queries = 8 blocks.
  a.batch = a.heads = 1;
  a.seq_q = a.seq_kv = 1024;
  EXPECT_DOUBLE_EQ(EstimateAttention(a, h100).fill, 8.0 / 132);
}

TEST(StreamingKernelModel, BytesAtHbmBandwidth) {
  EXPECT_NEAR(StreamingKernelSeconds(1'000'000'000, Gpu("h100-sxm")), 1e9 / (3.35e12 * 0.9) + 2e-6,
              1e-12);
}

TEST(LibraryProvider, TimesAttentionAndMemoryBoundKernelsButNotBareOnes) {
  const netmodel::Cluster cluster = netmodel::testing::DgxCluster("h100-sxm", 1);
  const LibraryModelProvider provider(cluster);
  NameTable names;
  Op op;
  op.kind = OpKind::kKernel;
  EXPECT_FALSE(provider.Duration(op, names).has_value());  // nothing to model: fallback
  op.bytes = 1'000'000'000;
  EXPECT_EQ(*provider.Duration(op, names),
            FromMicros(StreamingKernelSeconds(op.bytes, cluster.gpu) * 1e6));
  op.attention.batch = 2;
  op.attention.heads = 8;
  op.attention.seq_q = op.attention.seq_kv = 2048;
  op.attention.head_dim = 128;
  EXPECT_EQ(*provider.Duration(op, names),
            FromMicros(AttentionSeconds(op.attention, cluster.gpu) * 1e6));
}

TEST(GemmModel, Bf16Cube8192MatchesTheMeasurements) {
  // hardware.md: a bf16 8192^3 GEMM runs at about 770-800 TFLOP/s on H200; kernels.md 1.2:
  // 797.5 on H100.
  for (const char* gpu : {"h200-sxm", "h100-sxm"}) {
    const GemmEstimate e = EstimateGemm(Gemm(8192, 8192, 8192), Gpu(gpu));
    EXPECT_GE(EffectiveFlops(e), 770 * kTera) << gpu;
    EXPECT_LE(EffectiveFlops(e), 810 * kTera) << gpu;
    EXPECT_GT(e.compute_s, e.memory_s) << gpu;  // compute bound
    // 256x128 or 128x128 tiles (2048 or 4096 of them, nearly a tie): whole waves, and the
    // last partial one's tiles split along K (stream-K).
    EXPECT_GE(e.tile_m * e.tile_n, 128 * 128);
    EXPECT_EQ(e.split_k, 1);
    EXPECT_DOUBLE_EQ(e.tile_fill, 1.0);
    EXPECT_DOUBLE_EQ(e.operand_factor, 1.0);
    EXPECT_TRUE(e.stream_k);
    EXPECT_GT(e.k_factor, 0.96);
  }
}

TEST(GemmModel, TermsFollowTheDocumentedFormulas) {
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  const GemmEstimate e = EstimateGemm(Gemm(8192, 1024, 8192), h100);
  EXPECT_DOUBLE_EQ(e.flops, 2.0 * 8192 * 1024 * 8192);
  EXPECT_DOUBLE_EQ(e.peak, h100.bf16_flops);
  EXPECT_DOUBLE_EQ(e.memory_s, (8192.0 * 8192 + 8192.0 * 1024 + 8192.0 * 1024) * 2 /
                                   (h100.hbm_bandwidth * h100.hbm_efficiency));
  EXPECT_DOUBLE_EQ(e.overhead_s, kGemmFixedSeconds);
  // Whichever tile won: its main loop, its output store, whole waves and (when the last wave
  // is partial and that is faster) the rest streamed over every SM.
  const double tm = static_cast<double>(e.tile_m), tn = static_cast<double>(e.tile_n);
  const double sm_rate = h100.bf16_flops * kGemmCeiling / 132 * e.operand_factor;
  const double main_s = 2.0 * tm * tn * 8192 / sm_rate;
  const double sm_stream = h100.hbm_bandwidth * h100.hbm_efficiency / 132;
  const double epilogue_s = tm * tn * 2 / sm_stream;
  const double tile_s = main_s + kGemmEpilogueExposed * epilogue_s;
  const std::int64_t tiles =
      ((8192 + e.tile_m - 1) / e.tile_m) * ((1024 + e.tile_n - 1) / e.tile_n);
  EXPECT_EQ(e.work_units, tiles);
  const double waves = static_cast<double>((tiles + 131) / 132);
  const double streamed =
      static_cast<double>(tiles / 132) * tile_s +
      static_cast<double>(tiles % 132) / 132 * (main_s + 2 * tm * tn * 4 / sm_stream) + epilogue_s;
  EXPECT_NEAR(e.compute_s, e.stream_k ? streamed : waves * tile_s, 1e-12);
  EXPECT_DOUBLE_EQ(e.k_factor, main_s / tile_s);
  EXPECT_DOUBLE_EQ(e.efficiency, e.flops / (e.peak * e.compute_s));
  EXPECT_DOUBLE_EQ(e.seconds, std::max(e.compute_s, e.memory_s) + e.overhead_s);
}

TEST(GemmModel, SmallTilesRunSlowerThanLargeOnes) {
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  // 788 x 768: 64x64 tiles (13 x 12 = 156) or 128x64 (7 x 12 = 84) fill the SMs better than
  // large ones, at a lower rate: reuse 32 / 64 and 42.7 / 64 of 128x128's.
  const GemmEstimate e = EstimateGemm(Gemm(788, 768, 768), h100);
  EXPECT_LT(e.tile_m * e.tile_n, 128 * 128);
  EXPECT_DOUBLE_EQ(e.operand_factor, static_cast<double>(e.tile_m * e.tile_n) /
                                         static_cast<double>(e.tile_m + e.tile_n) /
                                         kGemmReferenceTileReuse);
  // CUDA-core (fp32) GEMMs take no such penalty.
  EXPECT_DOUBLE_EQ(EstimateGemm(Gemm(788, 768, 768, DataType::kFloat32), h100).operand_factor, 1.0);
}

TEST(GemmModel, SmallGemmsCostTheFixedPart) {
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  const GemmEstimate e = EstimateGemm(Gemm(64, 64, 64), h100);
  EXPECT_EQ(e.work_units, 1);
  EXPECT_GE(e.seconds, kGemmFixedSeconds);
  EXPECT_LT(e.seconds, 1.2 * kGemmFixedSeconds);
  // 512 times the work in one wave of tiles costs less than twice the time.
  const GemmEstimate bigger = EstimateGemm(Gemm(512, 512, 512), h100);
  EXPECT_LT(bigger.seconds, 2 * e.seconds);
  EXPECT_GT(bigger.seconds, e.seconds);
}

TEST(GemmModel, MatrixVectorProductsAreMemoryBound) {
  const netmodel::GpuSpec h200 = Gpu("h200-sxm");
  const GemmEstimate e = EstimateGemm(Gemm(1, 8192, 8192), h200);
  EXPECT_GT(e.memory_s, e.compute_s);
  EXPECT_DOUBLE_EQ(e.seconds, e.memory_s + kGemmFixedSeconds);
  // 128 MiB of weights at 0.87 x 4.8 TB/s (H200's streaming rate): about 32 us.
  EXPECT_NEAR(e.seconds, kGemmFixedSeconds + (8192.0 * 8192 + 2 * 8192) * 2 / 4.176e12, 1e-12);
}

TEST(GemmModel, WaveQuantizationAndShortK) {
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  // 128 x 8192 outputs in 128x128 tiles... 132 tiles of 256x128 fill the SMs once.
  const GemmEstimate full = EstimateGemm(Gemm(256 * 132, 128, 8192), h100);
  EXPECT_EQ(full.work_units, 132);
  EXPECT_DOUBLE_EQ(full.wave, 1.0);
  EXPECT_FALSE(full.stream_k);
  // 133 tiles: a second wave of one tile, which stream-K spreads over every SM instead.
  const GemmEstimate over = EstimateGemm(Gemm(256 * 133, 128, 8192), h100);
  EXPECT_TRUE(over.stream_k);
  EXPECT_LT(over.compute_s / full.compute_s, 1.1);
  // Short K: the tile's output store is no longer hidden behind its main loop, so halving K
  // from 256 to 128 saves less than half the time.
  const GemmEstimate k256 = EstimateGemm(Gemm(8192, 8192, 256), h100);
  const GemmEstimate k128 = EstimateGemm(Gemm(8192, 8192, 128), h100);
  EXPECT_LT(k128.k_factor, k256.k_factor);
  EXPECT_GT(k128.compute_s / k256.compute_s, 0.55);
}

TEST(GemmModel, SplitKFillsTheSmsForSmallOutputsWithLongK) {
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  const GemmEstimate e = EstimateGemm(Gemm(1024, 1024, 65536), h100);
  // 64 tiles of 128x128 on 132 SMs: split K in 2 (132 / 64), each split 32768 deep, and a
  // pass that sums the fp32 partials.
  EXPECT_EQ(e.split_k, 2);
  EXPECT_EQ(e.work_units, 128);
  EXPECT_DOUBLE_EQ(e.reduce_s, 1024.0 * 1024 * (4 * 2 + 2) / (h100.hbm_bandwidth * 0.9));
  EXPECT_GT(e.k_factor, 0.9);
}

TEST(GemmModel, BatchCountsAsTiles) {
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  const GemmEstimate one = EstimateGemm(Gemm(4096, 4096, 4096), h100);
  const GemmEstimate four = EstimateGemm(Gemm(4096, 4096, 4096, DataType::kBfloat16, 4), h100);
  EXPECT_EQ(four.work_units, 4 * one.work_units);
  EXPECT_DOUBLE_EQ(four.flops, 4 * one.flops);
}

TEST(GemmModel, PeakByDataType) {
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  const netmodel::GpuSpec a100 = Gpu("a100-sxm-80gb");
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kBfloat16, h100), 989.4 * kTera);
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kFloat16, h100), 989.4 * kTera);
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kFloat8e4m3, h100), 1978.9 * kTera);
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kFloat8e5m2, h100), 1978.9 * kTera);
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kFloat8e4m3, a100), 312 * kTera);  // no FP8
  // TF32 tensor cores at half the BF16 rate (A100 156, H100 SXM 494.7 TFLOP/s dense).
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kTfloat32, a100), 156 * kTera);
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kTfloat32, h100), 989.4 / 2 * kTera);
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kInt8, h100), 1978.9 * kTera);
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kInt8, a100), 624 * kTera);
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kFloat32, h100), 66.9 * kTera);  // CUDA cores
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kFloat64, a100), 19.5 * kTera / 2);
  // FP8 at twice the BF16 rate makes a large FP8 GEMM with fast accumulation nearly twice as
  // fast (its BF16 output store weighs a little more against the shorter main loop).
  const GemmEstimate bf16 = EstimateGemm(Gemm(8192, 8192, 8192), h100);
  GemmShape fast = Gemm(8192, 8192, 8192, DataType::kFloat8e4m3);
  fast.fast_accumulation = true;
  EXPECT_NEAR(bf16.seconds / EstimateGemm(fast, h100).seconds, 2.0, 0.1);
}

// Hopper promotes FP8 partial sums to FP32 on the CUDA cores unless fast accumulation is
// asked for: the main loop runs at kHopperFp8PromotedRate of its rate. Blackwell accumulates
// in FP32 and BF16 never promotes.
TEST(GemmModel, HopperFp8PromotionSlowsTheMainLoop) {
  GemmShape promoted = Gemm(8192, 8192, 8192, DataType::kFloat8e4m3);
  GemmShape fast = promoted;
  fast.fast_accumulation = true;
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  const GemmEstimate p = EstimateGemm(promoted, h100);
  const GemmEstimate f = EstimateGemm(fast, h100);
  EXPECT_NEAR(p.efficiency / f.efficiency, kHopperFp8PromotedRate, 0.01);
  EXPECT_GT(p.seconds, f.seconds * 1.1);
  const netmodel::GpuSpec b200 = Gpu("b200");
  EXPECT_DOUBLE_EQ(EstimateGemm(promoted, b200).seconds, EstimateGemm(fast, b200).seconds);
  GemmShape bf16 = Gemm(8192, 8192, 8192);
  GemmShape bf16_fast = bf16;
  bf16_fast.fast_accumulation = true;
  EXPECT_DOUBLE_EQ(EstimateGemm(bf16, h100).seconds, EstimateGemm(bf16_fast, h100).seconds);
}

TEST(GemmModel, DegenerateShapesCostTheFixedPart) {
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  EXPECT_DOUBLE_EQ(EstimateGemm(Gemm(16, 16, 0), h100).compute_s, 0);
  EXPECT_NEAR(EstimateGemm(Gemm(16, 16, 0), h100).seconds, kGemmFixedSeconds, 1e-9);
  EXPECT_NEAR(EstimateGemm(Gemm(16, -5, 16), h100).seconds, kGemmFixedSeconds, 1e-9);
}

TEST(CopyModel, BandwidthsPerKind) {
  const netmodel::Cluster h200 = DgxCluster("h200-sxm", 1);
  const netmodel::Cluster a100 = DgxCluster("a100-sxm-80gb", 1);
  // PCIe Gen5 x16 (63 GB/s per direction) at 0.8 on H200, Gen4 (31.5 GB/s) on A100.
  EXPECT_DOUBLE_EQ(CopyBandwidth(MemcpyKind::kHostToDevice, h200), 63e9 * kPcieEfficiency);
  EXPECT_DOUBLE_EQ(CopyBandwidth(MemcpyKind::kDeviceToHost, h200), 63e9 * kPcieEfficiency);
  EXPECT_DOUBLE_EQ(CopyBandwidth(MemcpyKind::kHostToDevice, a100), 31.5e9 * kPcieEfficiency);
  // Device to device: 4.18 TB/s counting read and write (hardware.md: about 4.3 TB/s).
  EXPECT_DOUBLE_EQ(2 * CopyBandwidth(MemcpyKind::kDeviceToDevice, h200), 4.8e12 * 0.87);
  // Peer: the NVLink data rate, 18 links x 20.6 GB/s.
  EXPECT_DOUBLE_EQ(CopyBandwidth(MemcpyKind::kPeer, h200), h200.scale_up.data_bandwidth());
  EXPECT_NEAR(CopyBandwidth(MemcpyKind::kPeer, h200), 18 * 20.6e9, 1);

  const std::uint64_t gib = 1ull << 30;
  EXPECT_DOUBLE_EQ(MemcpySeconds(MemcpyKind::kHostToDevice, gib, h200).value(),
                   kCopyLatencySeconds + static_cast<double>(gib) / (63e9 * 0.8));
  EXPECT_DOUBLE_EQ(MemcpySeconds(MemcpyKind::kDeviceToDevice, 0, h200).value(),
                   kCopyLatencySeconds);
}

TEST(CopyModel, UnknownLinksHaveNoModel) {
  netmodel::Cluster c = DgxCluster("h100-sxm", 1);
  c.gpu.pcie_generation = 2;  // not in netmodel::PcieX16Bandwidth
  EXPECT_EQ(MemcpySeconds(MemcpyKind::kHostToDevice, 100, c), std::nullopt);
  EXPECT_TRUE(MemcpySeconds(MemcpyKind::kPeer, 100, c).has_value());
  c.scale_up.bandwidth = 0;  // and no scale-up figure: peer copies have no rate either
  EXPECT_EQ(MemcpySeconds(MemcpyKind::kPeer, 100, c), std::nullopt);
}

TEST(CopyModel, MemsetWritesAtStreamingRate) {
  const netmodel::GpuSpec h200 = Gpu("h200-sxm");
  EXPECT_DOUBLE_EQ(MemsetSeconds(4'176'000'000, h200), h200.kernel_floor + 1e-3);
}

TEST(LibraryProvider, AnswersGemmsCopiesAndMemsetsOnly) {
  const netmodel::Cluster c = DgxCluster("h200-sxm", 1);
  LibraryModelProvider p(c);
  NameTable names;
  EXPECT_EQ(p.name(), "library");
  Op op;
  op.kind = OpKind::kKernel;
  op.name = names.Intern("some_kernel");
  EXPECT_EQ(p.Duration(op, names), std::nullopt);  // not a GEMM
  op.gemm = Gemm(8192, 8192, 8192);
  EXPECT_EQ(p.Duration(op, names), SecondsToSim(EstimateGemm(op.gemm, c.gpu).seconds));

  for (MemcpyKind kind : {MemcpyKind::kHostToDevice, MemcpyKind::kDeviceToHost,
                          MemcpyKind::kDeviceToDevice, MemcpyKind::kPeer}) {
    Op copy;
    copy.kind = OpKind::kMemcpy;
    copy.copy_kind = kind;
    copy.bytes = 123'456'789;
    EXPECT_EQ(p.Duration(copy, names), SecondsToSim(MemcpySeconds(kind, copy.bytes, c).value()))
        << ToString(kind);
  }
  Op set;
  set.kind = OpKind::kMemset;
  set.bytes = 1 << 20;
  EXPECT_EQ(p.Duration(set, names), SecondsToSim(MemsetSeconds(set.bytes, c.gpu)));
  set.kind = OpKind::kHost;
  EXPECT_EQ(p.Duration(set, names), std::nullopt);
}

TEST(LibraryProvider, CopyKindsOrderAsTheirRates) {
  const netmodel::Cluster c = DgxCluster("h100-sxm", 1);
  LibraryModelProvider p(c);
  NameTable names;
  auto time = [&](MemcpyKind kind) {
    Op copy;
    copy.kind = OpKind::kMemcpy;
    copy.copy_kind = kind;
    copy.bytes = 1ull << 30;
    return p.Duration(copy, names).value();
  };
  EXPECT_EQ(time(MemcpyKind::kHostToDevice), time(MemcpyKind::kDeviceToHost));
  EXPECT_GT(time(MemcpyKind::kHostToDevice), time(MemcpyKind::kPeer));
  EXPECT_GT(time(MemcpyKind::kPeer), time(MemcpyKind::kDeviceToDevice));
}

}  // namespace
}  // namespace myriad::emulator::timing
