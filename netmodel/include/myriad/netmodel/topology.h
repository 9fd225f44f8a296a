// The cluster as an explicit graph of directed links, for the flow-level network model:
// GPU <-> scale-up switch (NVSwitch, an NVL domain's switch tray, or PCIe), NIC <-> leaf,
// leaf <-> spine. Routes between GPUs follow NCCL's paths (NVLink inside a scale-up domain;
// across domains the NIC of the GPU's rail, reached over NVLink from another GPU when the
// destination is on another rail, as NCCL's PXN does) and spread over the spines by ECMP or
// by adaptive routing (the cluster's scale_out.routing). docs/network.md describes the graph, the
// link names and the routing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "myriad/netmodel/cluster.h"
#include "myriad/status.h"

namespace myriad::netmodel {

struct Link {
  std::string name;     // "gpu3.tx", "nic17.rx", "leaf5.up2", "leaf5.down2" (docs/network.md)
  double capacity = 0;  // bytes/s, data rate
  double latency = 0;   // seconds
  double nominal = 0;   // capacity before degradation
};

class Topology {
 public:
  // The graph of `cluster` (which must be valid), routed as its scale_out.routing says.
  static Topology Build(const Cluster& cluster);

  int link_count() const { return static_cast<int>(links_.size()); }
  const Link& link(int id) const { return links_[static_cast<size_t>(id)]; }
  const Cluster& cluster() const { return cluster_; }
  Routing routing() const { return cluster_.scale_out.routing; }
  // Whether link `id` joins a leaf to a spine (either direction).
  bool IsSpineLink(int id) const;
  // Links whose name matches `pattern` ('*' matches any run of characters).
  std::vector<int> Match(const std::string& pattern) const;
  // Runs link `id` at `fraction` (0 < fraction <= 1) of its present capacity: changes
  // compound (a link at half rate with 30% background load keeps 35% of its nominal).
  void Degrade(int id, double fraction);
  // Removes link `id`: ECMP stops choosing it; a trunk (adaptive routing) loses one spine's share
  // of its capacity (and fails with the last); a route that has no alternative fails with an error
  // naming the link.
  void Fail(int id);
  bool failed(int id) const { return failed_[static_cast<size_t>(id)]; }

  // The links a flow from `src` to `dst` (global GPU indices, different) crosses, in order.
  // `key` decorrelates the ECMP choice of flows between the same GPUs.
  Status Route(int src, int dst, std::uint64_t key, std::vector<int>* links) const;

 private:
  int AddLink(std::string name, double capacity, double latency);
  int Nic(int gpu) const;                       // the NIC a GPU's network traffic uses
  int Leaf(int nic) const;                      // the leaf a NIC hangs off
  int GpuOfRail(int node, int rail_gpu) const;  // the GPU of `node` with local index `rail_gpu`

  Cluster cluster_;
  std::vector<Link> links_;
  std::vector<bool> failed_;
  std::vector<bool> spine_;  // leaf <-> spine links
  int leaves_ = 0;
  int uplinks_ = 0;         // per leaf (1 when routing adaptively: the trunk)
  int spines_ = 0;          // spines a leaf reaches (a trunk spans them all)
  std::vector<int> trunk_;  // adaptive routing: the up/down trunk links
  // Link ids: gpu_tx_[g], gpu_rx_[g], nic_tx_[n], nic_rx_[n], up_[leaf * uplinks_ + u] (leaf to
  // spine u), down_[leaf * uplinks_ + u] (spine u to leaf).
  std::vector<int> gpu_tx_, gpu_rx_, nic_tx_, nic_rx_, up_, down_;
};

}  // namespace myriad::netmodel
