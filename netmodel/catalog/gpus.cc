// GPU catalog. Datasheet figures come from ../shared/reference/hardware.md (vendor
// datasheets, dense tensor-core rates without sparsity) unless a comment says otherwise.
// HBM "GB" figures are read as GiB: HBM stacks are binary-sized (nvidia-smi reports
// 81920 MiB on an A100 80GB).
#include <array>

#include "catalog/lookup.h"
#include "myriad/netmodel/hardware.h"
#include "myriad/netmodel/power.h"

namespace myriad::netmodel {
namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// NVLink per-link signalling rate per direction: NVLink3/4 = 25 GB/s, NVLink5 = 50 GB/s
// (12 x 25 = 300 GB/s on A100, 18 x 25 = 450 GB/s on H100, 18 x 50 = 900 GB/s on B200:
// shared/reference/hardware.md).
constexpr double kNvlink34LinkRate = 25 * kGiga;
constexpr double kNvlink5LinkRate = 50 * kGiga;

// NCCL's per-link data rates (NVIDIA/nccl src/graph/topo.h SM80_NVLINK_BW, SM90_NVLINK_BW,
// SM100_NVLINK_BW) divided by the signalling rates above.
constexpr double kNvlinkEffAmpere = 20.0 / 25.0;
constexpr double kNvlinkEffHopper = 20.6 / 25.0;
constexpr double kNvlinkEffBlackwell = 40.1 / 50.0;

// Per-channel (one SM) ceilings, from NCCL's per-channel bandwidth caps
// (src/graph/tuning.cc perChMaxTreeBws: Ampere 24.0, Hopper 38.7 GB/s). Blackwell is not
// in the versions we read; assumed to scale with the NVLink data rate (x1.95).
constexpr double kChannelBwAmpere = 24.0 * kGiga;
constexpr double kChannelBwHopper = 38.7 * kGiga;
constexpr double kChannelBwBlackwell = 38.7 * kGiga * (40.1 / 20.6);

// A global-memory round trip in SM clocks: Accel-Sim's A100 calibration
// (accel-sim/accel-sim-framework gpu-simulator/configs/tested-cfgs/NVIDIA_A100_80GB_PCIe/
// gpgpusim.config: gpgpu_l1_latency 37 + gpgpu_l2_rop_latency 224 + dram_latency 198, at its
// 1410 MHz core clock), with the L2 leg at its far partition's latency: A100's L2 is split in
// two, each address served by one half, and an SM waits 1.75x as long on the far half (GTC
// 2021 S33322, "Dissecting the Ampere GPU Architecture through Microbenchmarking"); a thread's
// turn of loads spans both halves, so it waits on the far one. Later GPUs (their L2s split as
// well): assumed the same number of clocks at their own clock.
constexpr double kMemoryLatencyClocks = 37 + 224 * 1.75 + 198;  // 627
// SM clocks the datasheet peaks imply (TensorFlopsPerClockPerSm's derivation: A100 312 TFLOP/s
// = 108 SMs x 2048 x 1.41 GHz, H100 989.4 = 132 x 4096 x 1.83 GHz, B200 2250 = 148 x 8192 x
// 1.86 GHz).
constexpr double kA100ClockHz = 1.41e9;
constexpr double kH100ClockHz = 1.83e9;
constexpr double kB200ClockHz = 1.86e9;

// Store-only kernels (PyTorch's fill_, one block) on A100: in both A100 traces of
// tests/emulator/profiling/data/hta (whole-microsecond timestamps) they record 3 us or 4 us,
// rarely 2 (means 3.2 and 2.9 us), as kernels.md 3.6's A100-SXM4-80GB row (p5 3 us) says.
constexpr double kKernelFloorAmpere = 3e-6;
// Hopper and Blackwell: assumed 2 us, inside kernels.md 3.6's H100 and B200 rows (shortest
// kernels 1.12-2.31 us, p5 1.50-4.96 us).
constexpr double kKernelFloorAssumed = 2e-6;

// H100 SXM power (power.h). Limit: the SXM5 datasheet's maximum TDP, 700 W, the default.
// Idle: assumed 10% of it; only limits other than the two below depend on it.
constexpr double kH100PowerLimit = 700;
constexpr double kH100IdlePower = 70;
// Two sustained operating points, each the measured rate over this GEMM model's (which is set
// by short benchmarks: kernels.md 1.1-1.2's 2048^3-8192^3 BF16 rows, 41-55 ms of GEMMs per
// size, within 5% of it), so each is the clock a long tensor-core load holds:
// - 500 W (kernels.md 1.3, pytorch/FBGEMM PR #2546, "H100 at 500 W cap"): BF16 8192^3,
//   65536x8192x7168 and 65536x3584x8192 at 585.23, 575.12 and 546.31 TFLOP/s, against 804.2,
//   805.3 and 806.3 modelled: 0.728, 0.714, 0.678, mean 0.707.
// - 700 W (kernels.md 1.2, zzc0721 #79, H100 80GB HBM3 at its default limit): 10240^3, the
//   sweep's longest run (about 120 ms of GEMMs), at 719.72 (BF16) and 668.42 (FP16) TFLOP/s
//   against 807.9 modelled: 0.891 and 0.827, mean 0.859, where 4096^3 and 8192^3 meet the model.
// They give an exponent of 1.96 (between 1, a fixed voltage, and 3, voltage in proportion to
// the clock) and a tensor-core draw of 918 W at the rates' clock.
constexpr double kH100LimitA = 500, kH100ClockA = 0.707;
constexpr double kH100LimitB = 700, kH100ClockB = 0.859;

void SetH100Power(GpuSpec* g) {
  g->power_limit = kH100PowerLimit;
  g->idle_power = kH100IdlePower;
  // The constants describe a clock that falls with the limit: the fit cannot fail.
  (void)FitPowerModel(kH100LimitA, kH100ClockA, kH100LimitB, kH100ClockB, g);
}

GpuSpec A100() {
  GpuSpec g;
  g.key = "a100-sxm-80gb";
  g.name = "NVIDIA A100-SXM4-80GB";
  g.bf16_flops = 312 * kTera;   // hardware.md
  g.fp8_flops = 0;              // no FP8 tensor cores on Ampere
  g.fp32_flops = 19.5 * kTera;  // A100 datasheet, FP32 (non-tensor)
  g.hbm_bytes = 80 * kGiB;      // hardware.md: 80 GB HBM2e
  g.hbm_bandwidth = 2.039e12;   // hardware.md
  // kernels.md 3.1 and 4: streaming kernels on A100 80GB reach 1.47-1.49 TB/s (CUB
  // babelstream mul, tensor.copy_, Liger RMSNorm).
  g.hbm_efficiency = 0.73;
  g.sm_count = 108;  // A100 whitepaper
  g.kernel_floor = kKernelFloorAmpere;
  g.memory_latency = kMemoryLatencyClocks / kA100ClockHz;
  g.compute_capability_major = 8;
  g.compute_capability_minor = 0;
  g.nvlink_generation = 3;
  g.nvlink_links = 12;  // hardware.md
  g.nvlink_link_bandwidth = kNvlink34LinkRate;
  g.nvlink_efficiency = kNvlinkEffAmpere;
  g.channel_bandwidth = kChannelBwAmpere;
  g.nvlink_sharp = false;  // NVSwitch gen2 has no multicast
  g.pcie_generation = 4;
  return g;
}

// The 40 GB A100 (HBM2): as the 80 GB one but for memory, whose rate is the A100 datasheet's
// 1,555 GB/s. Its streaming efficiency is assumed the 80 GB part's (no 40 GB row in
// kernels.md). PyTorch's profiler names Meta's boards of it "NVIDIA A100-PG509-200".
GpuSpec A100_40GB() {
  GpuSpec g = A100();
  g.key = "a100-sxm-40gb";
  g.name = "NVIDIA A100-SXM4-40GB";
  g.hbm_bytes = 40 * kGiB;
  g.hbm_bandwidth = 1.555e12;
  return g;
}

GpuSpec H100() {
  GpuSpec g;
  g.key = "h100-sxm";
  g.name = "NVIDIA H100 80GB HBM3";
  g.bf16_flops = 989.4 * kTera;  // hardware.md
  g.fp8_flops = 1978.9 * kTera;  // hardware.md
  g.fp32_flops = 66.9 * kTera;   // H100 SXM datasheet, FP32 (non-tensor)
  g.hbm_bytes = 80 * kGiB;       // hardware.md: 80 GB HBM3
  g.hbm_bandwidth = 3.35e12;     // hardware.md
  // kernels.md 3.1: QuACK softmax 3.01 TB/s (Nsight DRAM throughput, 89.7%), a PyTorch add
  // 3.07 TB/s.
  g.hbm_efficiency = 0.9;
  g.sm_count = 132;  // H100 SXM5 whitepaper
  g.kernel_floor = kKernelFloorAssumed;
  g.memory_latency = kMemoryLatencyClocks / kH100ClockHz;
  g.compute_capability_major = 9;
  g.compute_capability_minor = 0;
  g.nvlink_generation = 4;
  g.nvlink_links = 18;  // hardware.md
  g.nvlink_link_bandwidth = kNvlink34LinkRate;
  g.nvlink_efficiency = kNvlinkEffHopper;
  g.channel_bandwidth = kChannelBwHopper;
  g.nvlink_sharp = true;  // NVSwitch gen3 with NVLS (hardware.md)
  g.pcie_generation = 5;
  SetH100Power(&g);
  return g;
}

GpuSpec H200() {
  GpuSpec g = H100();
  g.key = "h200-sxm";
  g.name = "NVIDIA H200";
  g.bf16_flops = 989 * kTera;  // hardware.md
  g.fp8_flops = 1979 * kTera;  // hardware.md
  g.hbm_bytes = 141 * kGiB;    // hardware.md: 141 GB HBM3e
  g.hbm_bandwidth = 4.8e12;    // hardware.md
  // kernels.md 3.2: torch.compile's RMSNorm forward 4.18 TB/s, cuDNN's 3.7-3.85; hardware.md:
  // a device-to-device copy at about 4.3 TB/s counting reads and writes.
  g.hbm_efficiency = 0.87;
  // Power: H100's model (set by H100() above), for the same die at the same 700 W limit; no
  // published capped H200 GEMM row to set its own.
  return g;
}

GpuSpec B200() {
  GpuSpec g;
  g.key = "b200";
  g.name = "NVIDIA B200";
  g.bf16_flops = 2250 * kTera;  // hardware.md
  g.fp8_flops = 4500 * kTera;   // hardware.md
  g.fp32_flops = 75 * kTera;    // HGX B200 datasheet (600 TFLOP/s FP32 per 8 GPUs)
  g.hbm_bytes = 192 * kGiB;     // hardware.md: 192 GB HBM3e
  g.hbm_bandwidth = 8e12;       // hardware.md
  // kernels.md 3.1: CUB babelstream add, 6.721 TB/s (nvbench BWUtil 87.6% of its 7.67).
  g.hbm_efficiency = 0.84;
  g.sm_count = 148;  // Blackwell architecture brief (2 dies x 74 SMs)
  g.kernel_floor = kKernelFloorAssumed;
  g.memory_latency = kMemoryLatencyClocks / kB200ClockHz;
  g.compute_capability_major = 10;
  g.compute_capability_minor = 0;
  g.nvlink_generation = 5;
  g.nvlink_links = 18;  // 18 x 50 GB/s = 900 GB/s per direction (hardware.md)
  g.nvlink_link_bandwidth = kNvlink5LinkRate;
  g.nvlink_efficiency = kNvlinkEffBlackwell;
  g.channel_bandwidth = kChannelBwBlackwell;
  g.nvlink_sharp = true;
  g.pcie_generation = 5;  // HGX B200 host link
  return g;
}

GpuSpec GB200() {
  GpuSpec g = B200();
  g.key = "gb200";
  g.name = "NVIDIA GB200";
  g.bf16_flops = 2500 * kTera;  // hardware.md (per GPU)
  g.fp8_flops = 5000 * kTera;   // hardware.md
  g.fp32_flops = 80 * kTera;    // GB200 NVL72 datasheet (5760 TFLOP/s FP32 per 72 GPUs)
  g.hbm_bytes = 186 * kGiB;     // hardware.md: 186 GB HBM3e
  g.hbm_bandwidth = 8e12;       // hardware.md: about 8 TB/s
  g.hbm_efficiency = 0.84;      // assumed as B200's (the same HBM3e); no GB200 row yet
  return g;
}

const std::array<GpuSpec, 6>& Gpus() {
  static const std::array<GpuSpec, 6> kGpus = {A100(), A100_40GB(), H100(),
                                               H200(), B200(),      GB200()};
  return kGpus;
}

}  // namespace

Result<GpuSpec> FindGpu(std::string_view key) { return catalog::Find(Gpus(), key, "GPU"); }
std::vector<std::string> GpuKeys() { return catalog::Keys(Gpus()); }

double PcieX16Bandwidth(int generation) {
  // Per direction, x16, after 128b/130b encoding (PCI-SIG: Gen4 16 GT/s, Gen5 32, Gen6 64).
  switch (generation) {
    case 3:
      return 15.75 * kGiga;
    case 4:
      return 31.5 * kGiga;
    case 5:
      return 63.0 * kGiga;
    case 6:
      return 121.0 * kGiga;
    default:
      return 0;
  }
}

}  // namespace myriad::netmodel
