// The analytical collective model: latency + transfer + pipeline fill per (algorithm,
// protocol), all derived from the Cluster. docs/ARCHITECTURE.md explains each term.
#include "myriad/netmodel/collective.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "collective/nccl_constants.h"

namespace myriad::netmodel {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kBytesPerGB = 1e9;

int Idx(Algorithm a) { return static_cast<int>(a); }
int Idx(Protocol p) { return static_cast<int>(p); }

int Log2Floor(int x) {
  int r = 0;
  while (x > 1) {
    x >>= 1;
    ++r;
  }
  return r;
}

bool IsPointToPoint(CollectiveOp op) {
  return op == CollectiveOp::kAllToAll || op == CollectiveOp::kSendRecv ||
         op == CollectiveOp::kGather || op == CollectiveOp::kScatter;
}

bool IsAllGatherOrReduceScatter(CollectiveOp op) {
  return op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter;
}

// Bytes of the request each rank's ring moves in units of the buffer: algbw = busbw / factor.
double RingStepsFactor(CollectiveOp op, int n) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
      return 1.0 * (n - 1) / n;
    default:
      return 1.0;
  }
}

// What one domain sends (and receives) between domains in a double binary tree AllReduce, in
// buffers: an inner node takes S/2 from each of two children and sends S/2 up, then the reverse
// down, in one tree, and is a leaf (S/2 each way) in the other: 2S. With two domains each is
// the root of one tree and the only child in the other: S (the "tree effect" of nccl-tests
// issue 196, why NCCL picks (NVLS-)tree on 2 nodes).
double TreeNetworkTraffic(int domains) { return domains == 2 ? 1.0 : 2.0; }

}  // namespace

double BusBandwidthFactor(CollectiveOp op, int ranks) {
  const double n = ranks;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kGather:
    case CollectiveOp::kScatter:
      return (n - 1) / n;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce:
    case CollectiveOp::kSendRecv:
      return 1;
  }
  return 1;
}

namespace {

// algbw and busbw as nccl-tests reports them, from the predicted time.
CollectiveEstimate WithRates(CollectiveEstimate e, const CollectiveRequest& request) {
  if (e.time_us > 0) {
    e.algbw_gbps = static_cast<double>(request.bytes) / (e.time_us * 1e-6) / kBytesPerGB;
    e.busbw_gbps = e.algbw_gbps * BusBandwidthFactor(request.op, request.ranks);
  }
  return e;
}

}  // namespace

CollectiveModel::CollectiveModel(const Cluster& cluster) : cluster_(cluster) {}

CommLayout CollectiveModel::Layout(int ranks) const {
  CommLayout layout;
  layout.ranks = ranks;
  const int domain = cluster_.scale_up.domain_size;
  layout.ranks_per_domain = std::min(ranks, domain);
  layout.domains = (ranks + domain - 1) / domain;
  // A leaf serves nodes_per_leaf nodes of one rail; more nodes than that cross the spine.
  const int nodes = (ranks + cluster_.gpus_per_node - 1) / cluster_.gpus_per_node;
  layout.cross_leaf = cluster_.scale_out.topology != ScaleOutTopology::kNone &&
                      cluster_.scale_out.topology != ScaleOutTopology::kSingleSwitch &&
                      nodes > cluster_.scale_out.nodes_per_leaf;
  return layout;
}

bool CollectiveModel::Applicable(CollectiveOp op, const CommLayout& layout, Algorithm algorithm,
                                 Protocol protocol) const {
  const bool simple = protocol == Protocol::kSimple;
  const bool multi_domain = layout.domains > 1;
  const bool nvls = cluster_.scale_up.nvls && layout.ranks_per_domain > 1;
  const bool sharp = cluster_.scale_out.in_network_reduction;
  if (layout.ranks == 1) return !IsPointToPoint(op) && algorithm == Algorithm::kRing;
  // Algorithms the scenario's NCCL release does not have yet.
  const int version = cluster_.nccl_version;
  if ((algorithm == Algorithm::kNvls && version < kNcclVersionNvls) ||
      (algorithm == Algorithm::kNvlsTree && version < kNcclVersionNvlsTree) ||
      (algorithm == Algorithm::kPat && version < kNcclVersionPat))
    return false;
  if (IsPointToPoint(op)) return algorithm == Algorithm::kDirect && protocol != Protocol::kLL128;
  switch (algorithm) {
    case Algorithm::kRing:
      return true;
    case Algorithm::kTree:
      return op == CollectiveOp::kAllReduce && multi_domain;
    case Algorithm::kNvls:
      if (!simple || !nvls) return false;
      if (!multi_domain) return op == CollectiveOp::kAllReduce || IsAllGatherOrReduceScatter(op);
      return op == CollectiveOp::kAllReduce && sharp;
    case Algorithm::kNvlsTree:
      return simple && nvls && multi_domain && op == CollectiveOp::kAllReduce;
    case Algorithm::kCollNetDirect:
    case Algorithm::kCollNetChain:
      return simple && sharp && multi_domain && op == CollectiveOp::kAllReduce;
    case Algorithm::kPat:
      return simple && multi_domain && layout.ranks_per_domain == 1 &&
             IsAllGatherOrReduceScatter(op);
    case Algorithm::kDirect:
      return false;
  }
  return false;
}

CollectiveEstimate CollectiveModel::Time(CollectiveOp op, double bytes, const CommLayout& layout,
                                         Algorithm algorithm, Protocol protocol) const {
  namespace k = nccl;
  const int a = Idx(algorithm);
  const int p = Idx(protocol);
  const int n = layout.ranks;
  const int g = layout.ranks_per_domain;
  const int domains = layout.domains;
  const bool multi_domain = domains > 1;
  const bool pcie = cluster_.scale_up.kind == ScaleUpKind::kPcie;
  const double eff = k::kProtocolEfficiency[p];

  // --- Fabric bandwidths (bytes/s, per direction) ---
  const double up_bw = g > 1 ? cluster_.scale_up.data_bandwidth() : kInf;
  const double per_gpu_net = cluster_.scale_out_bandwidth_per_gpu();
  const double domain_net = multi_domain ? g * per_gpu_net : kInf;  // all rails of a domain
  // One GPU's flow uses one NIC: it cannot spread over a node's other NICs.
  const double flow_net = std::min(cluster_.nic_data_bandwidth(), per_gpu_net);

  // --- Per-hop latencies (us): protocol overhead + this cluster's fabric latency ---
  const double up_fabric_us = cluster_.scale_up.latency * 1e6;
  double hop_up = pcie ? k::kPcieHopUs[a][p] - k::kReferencePcieLatencyUs + up_fabric_us
                       : k::kNvlinkHopUs[a][p] - k::kReferenceNvlinkLatencyUs + up_fabric_us;
  const double net_fabric_us = cluster_.network_latency(layout.cross_leaf) * 1e6;
  const double hop_net = k::kNetHopUs[a][p] - k::kReferenceNetLatencyUs + net_fabric_us;
  hop_up = std::max(hop_up, 0.0);

  CollectiveEstimate e;
  e.algorithm = algorithm;
  e.protocol = protocol;

  double alg_bw = kInf;  // bottleneck algorithm bandwidth, bytes/s
  int max_channels = 0;  // 0: no per-channel limit applies
  int pipeline_stages = 1;
  double chunk_slots = 1;  // buffer slices covered by one pipeline chunk step per channel
  double latency = k::kBaseLatencyUs[a][p];

  if (n == 1) {
    // A single rank copies its buffer locally: read + write at HBM bandwidth.
    e.channels = 1;
    e.latency_us = latency;
    e.bottleneck_gbps = cluster_.gpu.hbm_bandwidth / 2 / kBytesPerGB;
    e.transfer_us = bytes / (cluster_.gpu.hbm_bandwidth / 2) * 1e6;
    e.time_us = e.latency_us + e.transfer_us;
    return e;
  }

  switch (algorithm) {
    case Algorithm::kRing: {
      // Every ring crosses each domain boundary once, so the rings of a domain share its NICs;
      // every GPU is on every ring, so they also share its scale-up bandwidth.
      const double ring_bus = std::min(up_bw, domain_net);
      alg_bw = ring_bus * eff / RingStepsFactor(op, n);
      max_channels =
          pcie ? k::kPcieChannels
               : std::min(k::kMaxChannels, k::kChannelsPerNvlink * cluster_.gpu.nvlink_links);
      const bool allreduce = op == CollectiveOp::kAllReduce;
      const int steps = allreduce ? 2 * (n - 1) : n - 1;
      const int net_steps = multi_domain ? (allreduce ? 2 * (domains - 1) : domains - 1) : 0;
      double step_up = hop_up;
      if (multi_domain) {
        const double overhead =
            k::kNetOverheadUs * (protocol == Protocol::kSimple ? k::kNetOverheadSimpleFactor : 1);
        step_up = std::max(step_up, overhead);
      }
      latency += (steps - net_steps) * step_up + net_steps * hop_net;
      break;
    }
    case Algorithm::kTree: {
      // Double binary tree between domains, a chain inside each (every GPU sends the buffer
      // to both neighbours: reduce up, broadcast down). Between domains each node is inner in
      // one tree and a leaf in the other, sending and receiving the buffer twice; with two
      // domains each is the other's only child, and sends and receives it once.
      alg_bw =
          std::min(up_bw / 2, domain_net / TreeNetworkTraffic(domains)) * eff * k::kTreeEfficiency;
      max_channels = std::min(k::kMaxChannels, k::kChannelsPerNvlink * cluster_.gpu.nvlink_links);
      const int depth = (g - 1) + Log2Floor(domains);
      pipeline_stages = 2 * depth;
      latency += 2 * ((g - 1) * hop_up + Log2Floor(domains) * hop_net);
      break;
    }
    case Algorithm::kNvls:
    case Algorithm::kNvlsTree: {
      // NVSwitch multimem: a GPU serves reads of its whole buffer (ld_reduce) and receives the
      // reduced slices (st): S + S/g each way for AllReduce; S one way for AllGather /
      // ReduceScatter.
      const double traffic = op == CollectiveOp::kAllReduce ? 1.0 + 1.0 / g : 1.0;
      alg_bw = cluster_.scale_up.data_bandwidth() * k::kNvlsEfficiency / traffic;
      pipeline_stages = 2;
      chunk_slots = g;
      max_channels = k::kNvlsChannels;
      latency = hop_up;
      if (multi_domain) {
        if (algorithm == Algorithm::kNvls) {
          // NVLS + SHARP: each GPU sends and receives its slice S/g once.
          alg_bw = std::min(alg_bw, g * per_gpu_net);
          latency += hop_net;
          pipeline_stages = 3;
        } else {
          // NVLS inside domains, a double binary tree on each slice between them.
          alg_bw =
              std::min(alg_bw, g * per_gpu_net / TreeNetworkTraffic(domains) * k::kTreeEfficiency);
          latency += 2 * Log2Floor(domains) * hop_net;
          pipeline_stages = 2 + 2 * Log2Floor(domains);
        }
      }
      break;
    }
    case Algorithm::kCollNetDirect:
    case Algorithm::kCollNetChain: {
      // Reduce-scatter inside the domain, SHARP reduces slices in the switches, all-gather back.
      const double intra = algorithm == Algorithm::kCollNetDirect
                               ? up_bw * g / (2.0 * (g - 1))  // direct scatter/gather
                               : up_bw / 2;                   // chain through the domain
      alg_bw = std::min(intra, g * per_gpu_net);
      max_channels = std::min(k::kMaxChannels, k::kChannelsPerNvlink * cluster_.gpu.nvlink_links);
      pipeline_stages = algorithm == Algorithm::kCollNetDirect ? 3 : 2 * (g - 1) + 1;
      latency += hop_up + hop_net;
      break;
    }
    case Algorithm::kPat: {
      // Parallel aggregated trees, one rank per node: log2(n) network steps.
      alg_bw = flow_net * eff * k::kPatEfficiency / RingStepsFactor(op, n);
      latency += Log2Floor(n) * hop_net;
      break;
    }
    case Algorithm::kDirect: {
      const double hop = multi_domain ? hop_net : hop_up;
      double up_bytes = 0;
      double net_bytes = 0;
      int peers = 1;
      switch (op) {
        case CollectiveOp::kSendRecv:
          // Ranks send to rank+1: with several domains the boundary pairs use the network.
          (multi_domain ? net_bytes : up_bytes) = bytes;
          break;
        default: {
          // AllToAll sends S/n to every peer; Gather/Scatter move the same volume at the root.
          up_bytes = bytes * (g - 1) / n;
          net_bytes = bytes * (n - g) / n;
          peers = n - 1;
          break;
        }
      }
      double net_rate = flow_net * eff;
      if (layout.cross_leaf && net_bytes > 0) {
        // Share of the traffic leaving the leaf, against uplinks 1/oversubscription as wide.
        const double leaf_ranks =
            std::min<double>(n, cluster_.scale_out.nodes_per_leaf * cluster_.gpus_per_node);
        const double cross = (n - leaf_ranks) / std::max(1.0, static_cast<double>(n - g));
        net_rate /= std::max(1.0, cross * cluster_.scale_out.oversubscription);
      }
      const double t_up = up_bytes > 0 ? up_bytes / (up_bw * eff) : 0;
      const double t_net = net_bytes > 0 ? net_bytes / net_rate : 0;
      const double t = std::max(t_up, t_net);
      alg_bw = t > 0 ? bytes / t : kInf;
      const int rounds = (peers + k::kP2pPeersPerRound - 1) / k::kP2pPeersPerRound;
      latency += rounds * hop;
      break;
    }
  }

  // --- Channels: NCCL drops channels for small messages; each channel is one SM ---
  int channels = max_channels;
  if (max_channels > 0 && algorithm != Algorithm::kNvls && algorithm != Algorithm::kNvlsTree) {
    double threshold = k::kThreadThresholdBytes[p];
    if (algorithm == Algorithm::kRing && protocol == Protocol::kLL) threshold *= n;
    const double per_channel = k::kThreads[p] * threshold;
    while (channels > 1 && bytes < channels * per_channel) --channels;
    // Fewer channels than the fabric needs: the SMs, not the links, set the rate.
    const double channel_limit =
        channels * cluster_.gpu.channel_bandwidth * eff / RingStepsFactor(op, n);
    alg_bw = std::min(alg_bw, algorithm == Algorithm::kRing
                                  ? channel_limit
                                  : channels * cluster_.gpu.channel_bandwidth * eff);
  }

  // --- Pipeline fill: a chunk must pass every stage before the pipeline runs full ---
  double fill_us = 0;
  if (pipeline_stages > 1 && std::isfinite(alg_bw) && protocol == Protocol::kSimple) {
    double chunk = k::kNvlsChunkBytes;
    if (algorithm != Algorithm::kNvls && algorithm != Algorithm::kNvlsTree) {
      chunk = k::kSimpleChunkBytes;
      while (chunk > k::kMinChunkBytes &&
             bytes / (channels * chunk) < k::kChunksPerStage * pipeline_stages)
        chunk /= 2;
    }
    const double chunk_bytes = std::min(bytes, std::max(channels, 1) * chunk_slots * chunk);
    fill_us = (pipeline_stages - 1) * chunk_bytes / alg_bw * 1e6;
  }

  e.channels = std::max(channels, 1);
  e.latency_us = latency;
  e.bottleneck_gbps = std::isfinite(alg_bw) ? alg_bw / kBytesPerGB : 0;
  e.transfer_us = std::isfinite(alg_bw) ? bytes / alg_bw * 1e6 : 0;
  e.pipeline_fill_us = fill_us;
  e.time_us = e.latency_us + e.transfer_us + e.pipeline_fill_us;
  return e;
}

Result<CollectiveEstimate> CollectiveModel::EstimateWith(const CollectiveRequest& request,
                                                         Algorithm algorithm,
                                                         Protocol protocol) const {
  if (request.ranks < 1 || request.ranks > cluster_.total_gpus())
    return Status::InvalidArgument("communicator of " + std::to_string(request.ranks) +
                                   " ranks does not fit a cluster of " +
                                   std::to_string(cluster_.total_gpus()) + " GPUs");
  const CommLayout layout = Layout(request.ranks);
  if (!Applicable(request.op, layout, algorithm, protocol))
    return Status::Unsupported(std::string(ToString(algorithm)) + "/" +
                               std::string(ToString(protocol)) + " does not run " +
                               std::string(ToString(request.op)) + " on this communicator");
  return WithRates(
      Time(request.op, static_cast<double>(request.bytes), layout, algorithm, protocol), request);
}

CommLayout CollectiveModel::LayoutOf(const std::vector<int>& gpus) const {
  CommLayout layout;
  layout.ranks = static_cast<int>(gpus.size());
  const int domain_size = cluster_.scale_up.domain_size;
  const int nodes_per_leaf = std::max(1, cluster_.scale_out.nodes_per_leaf);
  // Ranks per domain and leaves spanned, counted over sorted domain and leaf indices.
  std::vector<int> domains, leaves;
  domains.reserve(gpus.size());
  leaves.reserve(gpus.size());
  for (int gpu : gpus) {
    domains.push_back(gpu / domain_size);
    leaves.push_back(gpu / cluster_.gpus_per_node / nodes_per_leaf);
  }
  std::sort(domains.begin(), domains.end());
  std::sort(leaves.begin(), leaves.end());
  int run = 0;
  for (size_t i = 0; i < domains.size(); ++i) {
    run = (i > 0 && domains[i] == domains[i - 1]) ? run + 1 : 1;
    if (run == 1) ++layout.domains;
    layout.ranks_per_domain = std::max(layout.ranks_per_domain, run);
  }
  layout.cross_leaf = cluster_.scale_out.topology != ScaleOutTopology::kNone &&
                      cluster_.scale_out.topology != ScaleOutTopology::kSingleSwitch &&
                      !leaves.empty() && leaves.front() != leaves.back();
  return layout;
}

Result<CollectiveEstimate> CollectiveModel::Estimate(const CollectiveRequest& request) const {
  if (request.ranks < 1 || request.ranks > cluster_.total_gpus())
    return EstimateWith(request, Algorithm::kRing, Protocol::kSimple);  // carries the error
  return Estimate(request, Layout(request.ranks));
}

Result<CollectiveEstimate> CollectiveModel::Estimate(const CollectiveRequest& request,
                                                     const CommLayout& layout) const {
  // NCCL ignores NCCL_ALGO for point-to-point work: it always runs direct sends.
  const bool p2p = IsPointToPoint(request.op);
  bool found = false;
  CollectiveEstimate best;
  for (int ai = 0; ai < kNumAlgorithms; ++ai) {
    const auto algorithm = static_cast<Algorithm>(ai);
    if (!p2p && !request.algorithms.contains(algorithm)) continue;
    for (int pi = 0; pi < kNumProtocols; ++pi) {
      const auto protocol = static_cast<Protocol>(pi);
      if (!request.protocols.contains(protocol)) continue;
      if (!Applicable(request.op, layout, algorithm, protocol)) continue;
      CollectiveEstimate e =
          Time(request.op, static_cast<double>(request.bytes), layout, algorithm, protocol);
      if (!found || e.time_us < best.time_us) {
        best = e;
        found = true;
      }
    }
  }
  if (!found)
    return Status::InvalidArgument(
        "no allowed algorithm/protocol runs " + std::string(ToString(request.op)) + " on " +
        std::to_string(request.ranks) + " ranks (check NCCL_ALGO / NCCL_PROTO)");
  return WithRates(best, request);
}

}  // namespace myriad::netmodel
