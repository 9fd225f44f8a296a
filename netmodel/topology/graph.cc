// The link graph of a cluster and its routes (netmodel/topology.h, docs/network.md).
#include <algorithm>
#include <cmath>
#include <string>

#include "myriad/glob.h"
#include "myriad/netmodel/topology.h"

namespace myriad::netmodel {
namespace {

// SplitMix64's finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", 2014): a fixed, portable mix, so ECMP choices are the same on every machine.
std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

int Topology::AddLink(std::string name, double capacity, double latency) {
  links_.push_back({std::move(name), capacity, latency, capacity});
  failed_.push_back(false);
  spine_.push_back(false);
  return static_cast<int>(links_.size()) - 1;
}

Topology Topology::Build(const Cluster& cluster) {
  Topology t;
  t.cluster_ = cluster;
  const Routing routing = cluster.scale_out.routing;
  const int gpus = cluster.total_gpus();
  const double up_bw = cluster.scale_up.data_bandwidth();
  const double up_latency = cluster.scale_up.latency / 2;  // GPU to switch, switch to GPU
  for (int g = 0; g < gpus; ++g) {
    t.gpu_tx_.push_back(t.AddLink("gpu" + std::to_string(g) + ".tx", up_bw, up_latency));
    t.gpu_rx_.push_back(t.AddLink("gpu" + std::to_string(g) + ".rx", up_bw, up_latency));
  }
  const ScaleOut& out = cluster.scale_out;
  if (out.topology == ScaleOutTopology::kNone) return t;
  const int nics = cluster.nodes * out.nics_per_node;
  const double nic_bw = cluster.nic_data_bandwidth();
  for (int n = 0; n < nics; ++n) {
    t.nic_tx_.push_back(t.AddLink("nic" + std::to_string(n) + ".tx", nic_bw, out.nic.latency));
    t.nic_rx_.push_back(t.AddLink("nic" + std::to_string(n) + ".rx", nic_bw, out.nic.latency));
  }
  // Leaves: one switch; one per group of nodes_per_leaf nodes (Clos); or one per rail and
  // group (rail-optimized: NIC i of each node on rail i's leaf).
  const int per_leaf = std::max(1, out.nodes_per_leaf);
  const int groups = (cluster.nodes + per_leaf - 1) / per_leaf;
  int downlinks = 0;
  switch (out.topology) {
    case ScaleOutTopology::kSingleSwitch:
      t.leaves_ = 1;
      downlinks = nics;
      break;
    case ScaleOutTopology::kClos:
      t.leaves_ = groups;
      downlinks = per_leaf * out.nics_per_node;
      break;
    case ScaleOutTopology::kRailOptimized:
      t.leaves_ = groups * out.nics_per_node;
      downlinks = per_leaf;
      break;
    case ScaleOutTopology::kNone:
      break;
  }
  if (t.leaves_ <= 1) return t;
  // Uplinks carry the downlinks' capacity divided by the oversubscription, one per spine
  // (ECMP) or as one trunk (adaptive routing).
  const double uplink_total = downlinks * nic_bw / out.oversubscription;
  const int spines = std::max(1, static_cast<int>(std::lround(downlinks / out.oversubscription)));
  t.uplinks_ = routing == Routing::kAdaptive ? 1 : spines;
  t.spines_ = spines;
  const double uplink_bw = uplink_total / t.uplinks_;
  const double switch_latency = out.leaf_switch.latency;
  for (int leaf = 0; leaf < t.leaves_; ++leaf)
    for (int u = 0; u < t.uplinks_; ++u) {
      const std::string name = "leaf" + std::to_string(leaf);
      t.up_.push_back(t.AddLink(name + ".up" + std::to_string(u), uplink_bw, switch_latency));
      t.down_.push_back(t.AddLink(name + ".down" + std::to_string(u), uplink_bw, switch_latency));
      t.spine_[static_cast<size_t>(t.up_.back())] = true;
      t.spine_[static_cast<size_t>(t.down_.back())] = true;
      if (routing == Routing::kAdaptive)
        t.trunk_.insert(t.trunk_.end(), {t.up_.back(), t.down_.back()});
    }
  return t;
}

std::vector<int> Topology::Match(const std::string& pattern) const {
  std::vector<int> ids;
  for (int id = 0; id < link_count(); ++id)
    if (GlobMatch(pattern, links_[static_cast<size_t>(id)].name)) ids.push_back(id);
  return ids;
}

bool Topology::IsSpineLink(int id) const { return spine_[static_cast<size_t>(id)]; }

void Topology::Degrade(int id, double fraction) {
  links_[static_cast<size_t>(id)].capacity *= fraction;
}

void Topology::Fail(int id) {
  // A trunk loses one spine's share; it fails when no spine is left.
  Link& l = links_[static_cast<size_t>(id)];
  if (std::find(trunk_.begin(), trunk_.end(), id) != trunk_.end() && spines_ > 1) {
    l.capacity = std::max(0.0, l.capacity - l.nominal / spines_);
    if (l.capacity > l.nominal * 1e-9) return;
  }
  failed_[static_cast<size_t>(id)] = true;
}

int Topology::Nic(int gpu) const {
  const int node = gpu / cluster_.gpus_per_node;
  const int local = gpu % cluster_.gpus_per_node;
  const int nics = cluster_.scale_out.nics_per_node;
  return node * nics + local * nics / cluster_.gpus_per_node;
}

int Topology::Leaf(int nic) const {
  const ScaleOut& out = cluster_.scale_out;
  const int node = nic / out.nics_per_node;
  const int per_leaf = std::max(1, out.nodes_per_leaf);
  switch (out.topology) {
    case ScaleOutTopology::kClos:
      return node / per_leaf;
    case ScaleOutTopology::kRailOptimized: {
      const int groups = (cluster_.nodes + per_leaf - 1) / per_leaf;
      return (nic % out.nics_per_node) * groups + node / per_leaf;
    }
    default:
      return 0;
  }
}

int Topology::GpuOfRail(int node, int rail_gpu) const {
  return node * cluster_.gpus_per_node + rail_gpu;
}

Status Topology::Route(int src, int dst, std::uint64_t key, std::vector<int>* links) const {
  links->clear();
  auto use = [&](int id) -> Status {
    if (failed_[static_cast<size_t>(id)])
      return Status::Unsupported("no route from GPU " + std::to_string(src) + " to GPU " +
                                 std::to_string(dst) + ": link " + link(id).name + " has failed");
    links->push_back(id);
    return Status::Ok();
  };
  const int domain = cluster_.scale_up.domain_size;
  if (src / domain == dst / domain) {
    MYRIAD_RETURN_IF_ERROR(use(gpu_tx_[static_cast<size_t>(src)]));
    return use(gpu_rx_[static_cast<size_t>(dst)]);
  }
  if (nic_tx_.empty())
    return Status::Unsupported("no route from GPU " + std::to_string(src) + " to GPU " +
                               std::to_string(dst) + ": the cluster has no scale-out network");
  // On a rail-optimized fabric the data first crosses NVLink to the GPU of the destination's
  // rail (PXN), so that it stays on one rail's leaves.
  int sender = src;
  const int nics = cluster_.scale_out.nics_per_node;
  if (cluster_.scale_out.topology == ScaleOutTopology::kRailOptimized) {
    const int rail = Nic(dst) % nics;
    if (Nic(src) % nics != rail) {
      sender = GpuOfRail(src / cluster_.gpus_per_node, rail * cluster_.gpus_per_node / nics);
      if (sender / domain == src / domain && sender != src) {
        MYRIAD_RETURN_IF_ERROR(use(gpu_tx_[static_cast<size_t>(src)]));
        MYRIAD_RETURN_IF_ERROR(use(gpu_rx_[static_cast<size_t>(sender)]));
      } else {
        sender = src;
      }
    }
  }
  const int from = Nic(sender), to = Nic(dst);
  MYRIAD_RETURN_IF_ERROR(use(nic_tx_[static_cast<size_t>(from)]));
  const int leaf_a = Leaf(from), leaf_b = Leaf(to);
  if (leaf_a != leaf_b) {
    // The spine: hashed (ECMP) over the spines whose links up from leaf_a and down to leaf_b
    // both work, or the trunk (adaptive routing).
    const auto first = static_cast<int>(
        Mix(key ^ (static_cast<std::uint64_t>(src) << 32) ^ static_cast<std::uint64_t>(dst)) %
        static_cast<std::uint64_t>(uplinks_));
    int chosen = -1;
    for (int i = 0; i < uplinks_ && chosen < 0; ++i) {
      const int u = (first + i) % uplinks_;
      if (!failed_[static_cast<size_t>(up_[static_cast<size_t>(leaf_a * uplinks_ + u)])] &&
          !failed_[static_cast<size_t>(down_[static_cast<size_t>(leaf_b * uplinks_ + u)])])
        chosen = u;
    }
    if (chosen < 0)
      return Status::Unsupported("no route from GPU " + std::to_string(src) + " to GPU " +
                                 std::to_string(dst) + ": every spine link between leaf " +
                                 std::to_string(leaf_a) + " and leaf " + std::to_string(leaf_b) +
                                 " has failed");
    links->push_back(up_[static_cast<size_t>(leaf_a * uplinks_ + chosen)]);
    links->push_back(down_[static_cast<size_t>(leaf_b * uplinks_ + chosen)]);
  }
  return use(nic_rx_[static_cast<size_t>(to)]);
}

}  // namespace myriad::netmodel
