// A cluster as the network model sees it: GPUs grouped into scale-up domains (NVLink),
// domains joined by a scale-out network (NICs and switches).
#pragma once

#include <string>

#include "myriad/netmodel/hardware.h"
#include "myriad/status.h"

namespace myriad::netmodel {

enum class ScaleUpKind {
  kNvSwitch,   // one node's GPUs share NVSwitches (DGX/HGX)
  kNvlDomain,  // NVLink spans several nodes (GB200 NVL72)
  kPcie,       // no NVLink: GPUs talk over PCIe
};

enum class ScaleOutTopology {
  kNone,           // single scale-up domain, no network
  kSingleSwitch,   // every NIC on one switch
  kRailOptimized,  // NIC i of every node on rail i's leaves; spine joins rails
  kClos,           // two-tier leaf/spine, leaves may be oversubscribed
};

// How a leaf spreads traffic over its spines.
enum class Routing {
  // Each connection (queue pair) takes one spine, chosen by a hash of its addresses: flows can
  // collide on one uplink while others idle (RoCE/Ethernet ECMP).
  kEcmp,
  // Packets go to the least loaded spine (InfiniBand adaptive routing, per-packet spraying): a
  // leaf's uplinks behave as one trunk of their total capacity.
  kAdaptive,
};

std::string_view ToString(ScaleUpKind kind);
std::string_view ToString(ScaleOutTopology topology);
std::string_view ToString(Routing routing);

// The NCCL release whose algorithm choices the collective model follows, as NCCL_VERSION_CODE
// (major x 10000 + minor x 100 + patch): 2.28.9, the toolkit's NCCL here (its tuning.cc
// constants are in collective/nccl_constants.h). Older releases lack algorithms: NVLS before
// 2.17, NVLS-Tree before 2.18, PAT before 2.23 (NCCL release notes).
inline constexpr int kDefaultNcclVersion = 22809;
inline constexpr int kNcclVersionNvls = 21700;
inline constexpr int kNcclVersionNvlsTree = 21800;
inline constexpr int kNcclVersionPat = 22300;
// Parses "2.18" or "2.18.3" into a version code; the error names the value.
Result<int> ParseNcclVersion(std::string_view text);

// NCCL's default number of queue pairs per connection (NCCL_IB_QPS_PER_CONNECTION = 1, NCCL
// environment variable documentation); each is hashed on its own under ECMP.
inline constexpr int kDefaultQpsPerConnection = 1;

struct ScaleUp {
  ScaleUpKind kind = ScaleUpKind::kNvSwitch;
  int domain_size = 0;    // GPUs that reach each other over the scale-up fabric
  double bandwidth = 0;   // per GPU, per direction, signalling rate
  double efficiency = 0;  // data fraction of `bandwidth`
  double latency = 0;     // GPU to GPU through the fabric, seconds
  bool nvls = false;      // NVLink SHARP usable
  double data_bandwidth() const { return bandwidth * efficiency; }
};

struct ScaleOut {
  ScaleOutTopology topology = ScaleOutTopology::kNone;
  NicSpec nic;
  int nics_per_node = 0;
  SwitchSpec leaf_switch;
  double oversubscription = 1.0;  // leaf downlink : uplink capacity
  int nodes_per_leaf = 0;         // nodes whose NICs (of one rail) share a leaf
  bool in_network_reduction = false;
  Fabric fabric = Fabric::kInfiniBand;
  Routing routing = Routing::kAdaptive;
  int qps_per_connection = kDefaultQpsPerConnection;  // NCCL_IB_QPS_PER_CONNECTION
};

// The most GPUs a cluster may have: ten times the largest clusters built (about 100,000
// GPUs), so that what a scenario or a trace describes fits in memory (`nodes = 10000000` used
// to exhaust it building the network). docs/scenarios.md, "Bounds".
inline constexpr int kMaxClusterGpus = 1 << 20;

struct Cluster {
  GpuSpec gpu;
  int nodes = 0;
  int gpus_per_node = 0;
  ScaleUp scale_up;
  ScaleOut scale_out;

  int nccl_version = kDefaultNcclVersion;  // whose algorithms the collective model may pick

  int total_gpus() const { return nodes * gpus_per_node; }
  int scale_up_domains() const { return total_gpus() / scale_up.domain_size; }
  // Scale-out data rate per GPU, per direction (all of a node's NICs shared by its GPUs).
  double scale_out_bandwidth_per_gpu() const;
  // Data rate of the NIC that one GPU's traffic uses (flows are not split across NICs).
  double nic_data_bandwidth() const { return scale_out.nic.line_rate * scale_out.nic.efficiency; }
  // One-way latency NIC to NIC through the fabric; `cross_leaf` adds the spine hops.
  double network_latency(bool cross_leaf) const;

  // Checks internal consistency (divisibility, positive rates); the message names the field.
  Status Validate() const;
};

}  // namespace myriad::netmodel
