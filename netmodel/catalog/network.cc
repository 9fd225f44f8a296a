// NIC and switch catalog.
#include <array>

#include "catalog/lookup.h"
#include "myriad/netmodel/hardware.h"

namespace myriad::netmodel {
namespace {

constexpr double kGbps = 1e9 / 8;  // bytes/s per Gb/s

// nccl-tests reaches 46-49 GB/s on a 50 GB/s ConnectX-7 (shared/reference/collectives.md,
// nccl-tests issues 290, 267): about 96% of line rate after IB headers and flow control.
constexpr double kRdmaEfficiency = 0.96;

// One-way NIC processing latency. Assumed (typical RDMA NIC figure, not from a datasheet we
// hold); with kSwitchLatency it makes a one-leaf path about 1 us, the fabric NCCL's
// network-hop constants were tuned on.
constexpr double kNicLatency = 0.4e-6;
// Port-to-port latency of an InfiniBand/Ethernet AI switch. Assumed, same caveat.
constexpr double kSwitchLatency = 0.2e-6;

// ConnectX-6 HDR: 200 Gb/s InfiniBand on PCIe Gen4 x16 (NVIDIA ConnectX-6 VPI product brief;
// the DGX A100 and Selene's scale-out NICs, shared/reference/training.md). Same efficiency and
// latency assumptions as ConnectX-7.
NicSpec Cx6() {
  return {"cx6-200g", "NVIDIA ConnectX-6 HDR 200G", 200 * kGbps, kRdmaEfficiency, kNicLatency,
          4 /* PCIe Gen4 x16 */};
}
NicSpec Cx7() {
  return {"cx7-400g", "NVIDIA ConnectX-7 400G", 400 * kGbps, kRdmaEfficiency, kNicLatency,
          5 /* hardware.md: PCIe Gen5 x16 */};
}
NicSpec Cx8() {
  return {"cx8-800g", "NVIDIA ConnectX-8 800G", 800 * kGbps, kRdmaEfficiency, kNicLatency,
          6 /* hardware.md: PCIe Gen6 */};
}

// Quantum-2 (QM9700): 64 ports of NDR 400G; Quantum-X800: 144 ports of XDR 800G;
// both with SHARP in-network reduction (NVIDIA product briefs).
SwitchSpec Quantum2() {
  return {"quantum-2", "NVIDIA Quantum-2 NDR", 64, 400 * kGbps, kSwitchLatency,
          true,        Fabric::kInfiniBand};
}
SwitchSpec QuantumX800() {
  return {"quantum-x800", "NVIDIA Quantum-X800 XDR", 144, 800 * kGbps, kSwitchLatency,
          true,           Fabric::kInfiniBand};
}
// Quantum (QM8700/QM8790): 40 ports of HDR 200G with SHARP v2 (NVIDIA Quantum HDR product
// brief); the leaf and spine switches of DGX A100 SuperPODs such as Selene.
SwitchSpec QuantumHdr() {
  return {"quantum-hdr",      "NVIDIA Quantum HDR (QM8700)", 40, 200 * kGbps, kSwitchLatency, true,
          Fabric::kInfiniBand};
}
// A generic 64-port 400G Ethernet switch without in-network reduction.
SwitchSpec Ethernet400() {
  return {"ethernet-400g", "64-port 400G Ethernet", 64, 400 * kGbps, kSwitchLatency,
          false,           Fabric::kEthernet};
}

const std::array<NicSpec, 3>& Nics() {
  static const std::array<NicSpec, 3> kNics = {Cx6(), Cx7(), Cx8()};
  return kNics;
}
const std::array<SwitchSpec, 4>& Switches() {
  static const std::array<SwitchSpec, 4> kSwitches = {QuantumHdr(), Quantum2(), QuantumX800(),
                                                      Ethernet400()};
  return kSwitches;
}

}  // namespace

std::string_view ToString(Fabric fabric) {
  switch (fabric) {
    case Fabric::kInfiniBand:
      return "infiniband";
    case Fabric::kEthernet:
      return "ethernet";
  }
  return "?";
}

Result<NicSpec> FindNic(std::string_view key) { return catalog::Find(Nics(), key, "NIC"); }
std::vector<std::string> NicKeys() { return catalog::Keys(Nics()); }
Result<SwitchSpec> FindSwitch(std::string_view key) {
  return catalog::Find(Switches(), key, "switch");
}
std::vector<std::string> SwitchKeys() { return catalog::Keys(Switches()); }

}  // namespace myriad::netmodel
