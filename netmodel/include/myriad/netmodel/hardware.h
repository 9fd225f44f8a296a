// Hardware catalog: GPUs, NICs and switches as Myriad models them.
// Units are SI base units throughout: bytes, bytes/s, FLOP/s, seconds.
// The figures and their sources live in netmodel/catalog/*.cc.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "myriad/status.h"

namespace myriad::netmodel {

struct GpuSpec {
  std::string key;        // catalog key used in scenarios, e.g. "h100-sxm"
  std::string name;       // marketing name, e.g. "NVIDIA H100 SXM"
  double bf16_flops = 0;  // dense tensor-core BF16
  double fp8_flops = 0;   // dense tensor-core FP8 (0 = not supported)
  double fp32_flops = 0;  // non-tensor FP32
  double hbm_bytes = 0;
  double hbm_bandwidth = 0;
  // Fraction of hbm_bandwidth that the best streaming kernels reach (reads plus writes), as
  // measured on that GPU; memory-bound kernels, copies and GEMM outputs move at it.
  double hbm_efficiency = 0.9;
  int sm_count = 0;
  // Shortest device-side duration of a kernel (grid launch, one store per thread, completion),
  // seconds: what the smallest kernels of a real trace measure.
  double kernel_floor = 2e-6;
  // One dependent global-memory round trip from an SM (a load that misses L1 and L2 until its
  // data returns), seconds: a kernel whose threads wait on their loads in turn takes this per
  // turn however few bytes it moves.
  double memory_latency = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int nvlink_generation = 0;
  int nvlink_links = 0;
  double nvlink_link_bandwidth = 0;  // per link, per direction, as the datasheet counts it
  // Fraction of the NVLink signalling rate that carries data, as NCCL counts it
  // (NCCL src/graph/topo.h: SM80_NVLINK_BW 20.0, SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1
  // GB/s per link against 25 / 25 / 50 GB/s on the datasheet).
  double nvlink_efficiency = 0;
  // What one NCCL channel (one thread block on one SM) can move, per direction.
  double channel_bandwidth = 0;
  bool nvlink_sharp = false;  // NVSwitch multicast/reduction (NVLS) available
  int pcie_generation = 0;    // host link, x16
  // Power and clocks (power.h): the rates above are what short benchmarks measure, at the
  // clock the GPU holds before its power limit binds. Watts.
  double power_limit = 0;  // the board limit in force (the datasheet's default)
  double idle_power = 0;   // the board's draw with clocks up and no work
  // What a dense tensor-core load would draw at the rates' clock if nothing capped it, and
  // the exponent of the clock in the power above idle (P - idle ~ clock^exponent). 0: no
  // power model for this GPU; it holds its rates' clock under any load.
  double tensor_power = 0;
  double clock_power_exponent = 0;
};

struct NicSpec {
  std::string key;
  std::string name;
  double line_rate = 0;   // bytes/s per direction
  double efficiency = 0;  // fraction of line rate that collectives achieve
  double latency = 0;     // one-way NIC processing latency, seconds
  int pcie_generation = 0;
};

// The scale-out fabric's technology, which decides how it routes by default.
enum class Fabric {
  kInfiniBand,  // InfiniBand (Quantum switches): adaptive routing
  kEthernet,    // RoCE over Ethernet: static ECMP hashing
};

std::string_view ToString(Fabric fabric);

struct SwitchSpec {
  std::string key;
  std::string name;
  int radix = 0;                      // ports
  double port_rate = 0;               // bytes/s per direction
  double latency = 0;                 // port-to-port, seconds
  bool in_network_reduction = false;  // SHARP-capable
  Fabric fabric = Fabric::kInfiniBand;
};

// Catalog look-ups. The error names the key and lists the known ones.
Result<GpuSpec> FindGpu(std::string_view key);
Result<NicSpec> FindNic(std::string_view key);
Result<SwitchSpec> FindSwitch(std::string_view key);
std::vector<std::string> GpuKeys();
std::vector<std::string> NicKeys();
std::vector<std::string> SwitchKeys();

// Per-direction data rate of a x16 PCIe link of the given generation.
double PcieX16Bandwidth(int generation);

}  // namespace myriad::netmodel
