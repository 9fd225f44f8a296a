// Clusters built straight from the catalog, so netmodel tests need no scenario files.
#pragma once

#include "myriad/netmodel/cluster.h"

namespace myriad::netmodel::testing {

// `nodes` HGX/DGX nodes of 8 GPUs on NVSwitch; with more than one node, 8 x 400G NICs per
// node on a rail-optimized fabric (leaves of 32 nodes per rail).
inline Cluster DgxCluster(const char* gpu_key, int nodes) {
  Cluster c;
  c.gpu = FindGpu(gpu_key).value();
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.scale_up.kind = ScaleUpKind::kNvSwitch;
  c.scale_up.domain_size = 8;
  c.scale_up.bandwidth = c.gpu.nvlink_links * c.gpu.nvlink_link_bandwidth;
  c.scale_up.efficiency = c.gpu.nvlink_efficiency;
  c.scale_up.latency = 0.5e-6;
  c.scale_up.nvls = c.gpu.nvlink_sharp;
  c.scale_out.nic = FindNic("cx7-400g").value();
  c.scale_out.leaf_switch = FindSwitch("quantum-2").value();
  c.scale_out.nics_per_node = 8;
  c.scale_out.nodes_per_leaf = 32;
  c.scale_out.topology = nodes > 1 ? ScaleOutTopology::kRailOptimized : ScaleOutTopology::kNone;
  return c;
}

}  // namespace myriad::netmodel::testing
