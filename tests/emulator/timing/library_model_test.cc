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
  AttentionShape a;
  a.batch = 1;
  a.heads = 32;
  a.seq_q = a.seq_kv = 4096;
  a.head_dim = 128;
  // 4 x 32 x 4096^2 x 128 / 2 FLOP at 989.4 TFLOP/s x 0.6 x 4096 / (4096 + 256), + 2 us.
  const double flops = 4.0 * 32 * 4096.0 * 4096.0 * 128 / 2;
  const double efficiency = 0.6 * 4096 / (4096 + 256.0);
  const double forward = flops / (989.4e12 * efficiency) + 2e-6;
  EXPECT_NEAR(AttentionSeconds(a, Gpu("h100-sxm")), forward, 1e-9);
  a.backward = true;
  EXPECT_NEAR(AttentionSeconds(a, Gpu("h100-sxm")), 2.5 * (forward - 2e-6) + 2e-6, 1e-9);
  // Without the causal mask twice the work; on short sequences the efficiency drops.
  a.backward = false;
  a.causal = false;
  EXPECT_NEAR(AttentionSeconds(a, Gpu("h100-sxm")), 2 * (forward - 2e-6) + 2e-6, 1e-9);
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

TEST(GemmModel, Bf16Cube8192MatchesTheH200Measurement) {
  // shared/reference/hardware.md: a bf16 8192^3 GEMM runs at about 770-800 TFLOP/s on H200.
  for (const char* gpu : {"h200-sxm", "h100-sxm"}) {
    const GemmEstimate e = EstimateGemm(Gemm(8192, 8192, 8192), Gpu(gpu));
    EXPECT_GE(EffectiveFlops(e), 770 * kTera) << gpu;
    EXPECT_LE(EffectiveFlops(e), 800 * kTera) << gpu;
    EXPECT_GT(e.compute_s, e.memory_s) << gpu;  // compute bound
    EXPECT_EQ(e.tile_m, 256);
    EXPECT_EQ(e.tile_n, 128);
    EXPECT_EQ(e.split_k, 1);
    EXPECT_EQ(e.work_units, 2048);
    EXPECT_DOUBLE_EQ(e.wave, 2048.0 / (16 * 132));  // 16 waves on 132 SMs
    EXPECT_DOUBLE_EQ(e.tile_fill, 1.0);
    EXPECT_DOUBLE_EQ(e.k_factor, 8192.0 / (8192 + kGemmKHalf));
  }
}

TEST(GemmModel, TermsFollowTheDocumentedFormulas) {
  const netmodel::GpuSpec h200 = Gpu("h200-sxm");
  const GemmEstimate e = EstimateGemm(Gemm(3000, 5000, 700, DataType::kBfloat16, 3), h200);
  EXPECT_DOUBLE_EQ(e.flops, 2.0 * 3000 * 5000 * 700 * 3);
  EXPECT_DOUBLE_EQ(e.peak, h200.bf16_flops);
  EXPECT_DOUBLE_EQ(e.efficiency, kGemmCeiling * e.wave * e.tile_fill * e.k_factor);
  EXPECT_DOUBLE_EQ(e.compute_s, e.flops / (e.peak * e.efficiency));
  EXPECT_DOUBLE_EQ(e.memory_s, (3000.0 * 700 + 700.0 * 5000 + 3000.0 * 5000) * 2 * 3 /
                                   (h200.hbm_bandwidth * kHbmEfficiency));
  EXPECT_DOUBLE_EQ(e.overhead_s, kKernelFloorSeconds);
  EXPECT_DOUBLE_EQ(e.seconds, std::max(e.compute_s, e.memory_s) + e.overhead_s);
  // n > m: the 256 side runs along N. 256x128 tiles: 24 x 20 x 3 = 1440 units, 11 waves on 132
  // SMs (0.992), fill 0.954; 128x128: 24 x 40 x 3 = 2880 units, 22 waves (0.992), fill 0.954:
  // a tie, which keeps the larger tile.
  EXPECT_EQ(e.tile_m, 128);
  EXPECT_EQ(e.tile_n, 256);
  EXPECT_DOUBLE_EQ(e.tile_fill, 3000.0 * 5000 / (3072.0 * 5120));
}

TEST(GemmModel, Cube1024UsesSmallerTilesAndIsFarFromPeak) {
  const GemmEstimate e = EstimateGemm(Gemm(1024, 1024, 1024), Gpu("h200-sxm"));
  // 128x128 tiles: 64 of them fill 64 of 132 SMs (256x128 would fill 32).
  EXPECT_EQ(e.tile_m, 128);
  EXPECT_EQ(e.tile_n, 128);
  EXPECT_EQ(e.split_k, 1);  // K = 1024 is too short to split (kGemmMinSplitK)
  EXPECT_DOUBLE_EQ(e.wave, 64.0 / 132);
  EXPECT_GT(EffectiveFlops(e), 200 * kTera);
  EXPECT_LT(EffectiveFlops(e), 350 * kTera);
}

TEST(GemmModel, SmallGemmsAreLatencyBound) {
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  const GemmEstimate e = EstimateGemm(Gemm(64, 64, 64), h100);
  EXPECT_EQ(e.work_units, 1);
  EXPECT_GE(e.seconds, kKernelFloorSeconds);
  EXPECT_LT(e.seconds, 2 * kKernelFloorSeconds);
  EXPECT_LT(EffectiveFlops(e), 0.001 * h100.bf16_flops);
  // 512 times the work in one wave of tiles costs less than twice the time.
  const GemmEstimate bigger = EstimateGemm(Gemm(512, 512, 512), h100);
  EXPECT_LT(bigger.seconds, 2 * e.seconds);
  EXPECT_GT(bigger.seconds, e.seconds);
}

TEST(GemmModel, MatrixVectorProductsAreMemoryBound) {
  const netmodel::GpuSpec h200 = Gpu("h200-sxm");
  const GemmEstimate e = EstimateGemm(Gemm(1, 8192, 8192), h200);
  EXPECT_GT(e.memory_s, e.compute_s);
  EXPECT_DOUBLE_EQ(e.seconds, e.memory_s + kKernelFloorSeconds);
  // 128 MiB of weights at 0.9 x 4.8 TB/s: about 31 us.
  EXPECT_NEAR(e.seconds, 2e-6 + (8192.0 * 8192 + 2 * 8192) * 2 / 4.32e12, 1e-12);
}

TEST(GemmModel, WaveQuantizationAndShortK) {
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  // 132 tiles of 128x128 fill the SMs once; 133 tiles need a second wave.
  const GemmEstimate full = EstimateGemm(Gemm(128 * 132, 128, 8192), h100);
  const GemmEstimate over = EstimateGemm(Gemm(128 * 133, 128, 8192), h100);
  EXPECT_NEAR(over.compute_s / full.compute_s, 2.0, 0.01);
  // Halving K halves the work but not the time once K nears kGemmKHalf: the K factor falls
  // from 256 / 384 to 128 / 256, so the time falls to 2/3, not 1/2.
  const GemmEstimate k256 = EstimateGemm(Gemm(8192, 8192, 256), h100);
  const GemmEstimate k128 = EstimateGemm(Gemm(8192, 8192, 128), h100);
  EXPECT_DOUBLE_EQ(k128.k_factor, 0.5);
  EXPECT_NEAR(k128.compute_s / k256.compute_s, 2.0 / 3.0, 1e-9);
}

TEST(GemmModel, SplitKFillsTheSmsForSmallOutputsWithLongK) {
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  const GemmEstimate e = EstimateGemm(Gemm(1024, 1024, 65536), h100);
  // 64 tiles of 128x128 on 132 SMs: split K in 2 (132 / 64), each split 32768 deep.
  EXPECT_EQ(e.split_k, 2);
  EXPECT_EQ(e.work_units, 128);
  EXPECT_DOUBLE_EQ(e.k_factor, 32768.0 / (32768 + kGemmKHalf));
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
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kInt8, h100), 1978.9 * kTera);
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kInt8, a100), 624 * kTera);
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kFloat32, h100), 66.9 * kTera);  // CUDA cores
  EXPECT_DOUBLE_EQ(GemmPeakFlops(DataType::kFloat64, a100), 19.5 * kTera / 2);
  // FP8 at twice the BF16 rate makes a large FP8 GEMM nearly twice as fast.
  const GemmEstimate bf16 = EstimateGemm(Gemm(8192, 8192, 8192), h100);
  const GemmEstimate fp8 = EstimateGemm(Gemm(8192, 8192, 8192, DataType::kFloat8e4m3), h100);
  EXPECT_NEAR(bf16.seconds / fp8.seconds, 2.0, 0.01);
}

TEST(GemmModel, DegenerateShapesCostTheFloor) {
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  EXPECT_DOUBLE_EQ(EstimateGemm(Gemm(16, 16, 0), h100).compute_s, 0);
  EXPECT_NEAR(EstimateGemm(Gemm(16, 16, 0), h100).seconds, kKernelFloorSeconds, 1e-9);
  EXPECT_NEAR(EstimateGemm(Gemm(16, -5, 16), h100).seconds, kKernelFloorSeconds, 1e-9);
}

TEST(CopyModel, BandwidthsPerKind) {
  const netmodel::Cluster h200 = DgxCluster("h200-sxm", 1);
  const netmodel::Cluster a100 = DgxCluster("a100-sxm-80gb", 1);
  // PCIe Gen5 x16 (63 GB/s per direction) at 0.8 on H200, Gen4 (31.5 GB/s) on A100.
  EXPECT_DOUBLE_EQ(CopyBandwidth(MemcpyKind::kHostToDevice, h200), 63e9 * kPcieEfficiency);
  EXPECT_DOUBLE_EQ(CopyBandwidth(MemcpyKind::kDeviceToHost, h200), 63e9 * kPcieEfficiency);
  EXPECT_DOUBLE_EQ(CopyBandwidth(MemcpyKind::kHostToDevice, a100), 31.5e9 * kPcieEfficiency);
  // Device to device: 4.32 TB/s counting read and write (hardware.md: about 4.3 TB/s).
  EXPECT_DOUBLE_EQ(2 * CopyBandwidth(MemcpyKind::kDeviceToDevice, h200), 4.8e12 * 0.9);
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
  EXPECT_DOUBLE_EQ(MemsetSeconds(4'320'000'000, h200), kKernelFloorSeconds + 1e-3);
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
