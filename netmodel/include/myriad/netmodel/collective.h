// Analytical timing of NCCL collectives on a Cluster.
//
// For every (algorithm, protocol) NCCL could run, the model derives a latency and a bandwidth
// from the topology, then picks the fastest, the way NCCL's tuner does. See
// docs/ARCHITECTURE.md ("netmodel: analytical collectives") for the formulas.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "myriad/netmodel/cluster.h"
#include "myriad/status.h"

namespace myriad::netmodel {

enum class CollectiveOp {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv,
  kGather,
  kScatter,
};
inline constexpr int kNumCollectiveOps = 9;

enum class Algorithm {
  kRing,
  kTree,
  kNvls,
  kNvlsTree,
  kCollNetDirect,
  kCollNetChain,
  kPat,
  kDirect
};
inline constexpr int kNumAlgorithms = 8;

enum class Protocol { kLL, kLL128, kSimple };
inline constexpr int kNumProtocols = 3;

std::string_view ToString(CollectiveOp op);
std::string_view ToString(Algorithm algorithm);
std::string_view ToString(Protocol protocol);
// Accepts nccl-tests names ("all_reduce", "allreduce", "all-reduce", "sendrecv", "alltoall").
Result<CollectiveOp> ParseCollectiveOp(std::string_view name);

// busbw = algbw x BusBandwidthFactor (nccl-tests doc/PERFORMANCE.md).
double BusBandwidthFactor(CollectiveOp op, int ranks);

// A set of algorithms or protocols, as NCCL_ALGO / NCCL_PROTO select them.
template <typename Enum, int N>
class EnumSet {
 public:
  static EnumSet All() {
    EnumSet s;
    s.bits_.fill(true);
    return s;
  }
  bool contains(Enum e) const { return bits_[static_cast<int>(e)]; }
  void insert(Enum e) { bits_[static_cast<int>(e)] = true; }
  void erase(Enum e) { bits_[static_cast<int>(e)] = false; }
  EnumSet Without(const EnumSet& other) const {
    EnumSet r = *this;
    for (int i = 0; i < N; ++i)
      if (other.bits_[i]) r.bits_[i] = false;
    return r;
  }
  bool empty() const {
    for (bool b : bits_)
      if (b) return false;
    return true;
  }

 private:
  std::array<bool, N> bits_{};
};
using AlgorithmSet = EnumSet<Algorithm, kNumAlgorithms>;
using ProtocolSet = EnumSet<Protocol, kNumProtocols>;

// Parses NCCL_ALGO / NCCL_PROTO values: a comma-separated, case-insensitive list, or "^list"
// to exclude ("ring,tree", "^nvls", "LL128,Simple"). "CollNet" means both CollNet variants.
Result<AlgorithmSet> ParseNcclAlgo(std::string_view value);
Result<ProtocolSet> ParseNcclProto(std::string_view value);

struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::kAllReduce;
  // The nccl-tests "size": bytes of the whole buffer (AllGather, ReduceScatter, AllToAll,
  // Gather, Scatter: the gathered buffer, count x type size x ranks).
  std::uint64_t bytes = 0;
  // Communicator size. Ranks fill GPUs in order: scale-up domains first, then across them.
  int ranks = 0;
  AlgorithmSet algorithms = AlgorithmSet::All();
  ProtocolSet protocols = ProtocolSet::All();
};

// Where the predicted time comes from, so every number can be explained.
struct CollectiveEstimate {
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  int channels = 0;             // channels NCCL would use at this size
  double latency_us = 0;        // start-up: base + per-hop latencies
  double transfer_us = 0;       // bytes over the bottleneck bandwidth
  double pipeline_fill_us = 0;  // chunks filling and draining a multi-stage pipeline
  double bottleneck_gbps = 0;   // algorithm bandwidth of the bottleneck (GB/s, 1e9)
  double time_us = 0;           // latency + transfer + pipeline fill
  double algbw_gbps = 0;        // bytes / time
  double busbw_gbps = 0;        // algbw x bus factor
};

// The layout of a communicator on the cluster, derived once per rank count.
struct CommLayout {
  int ranks = 0;
  int domains = 0;           // scale-up domains the communicator spans
  int ranks_per_domain = 0;  // ranks inside each domain (the last one may hold fewer)
  bool cross_leaf = false;   // the scale-out path crosses the spine
};

class CollectiveModel {
 public:
  explicit CollectiveModel(const Cluster& cluster);

  // The fastest allowed (algorithm, protocol) for the request. Fails when the request is
  // impossible (ranks outside 1..total GPUs) or the sets exclude every applicable algorithm.
  Result<CollectiveEstimate> Estimate(const CollectiveRequest& request) const;

  // The same for a communicator of any GPUs (global GPU indices, `request.ranks` of them).
  Result<CollectiveEstimate> Estimate(const CollectiveRequest& request,
                                      const CommLayout& layout) const;

  // The estimate of one (algorithm, protocol); fails if it does not apply here.
  Result<CollectiveEstimate> EstimateWith(const CollectiveRequest& request, Algorithm algorithm,
                                          Protocol protocol) const;

  // Layout of the communicator of GPUs 0 .. ranks-1.
  CommLayout Layout(int ranks) const;
  // Layout of a communicator of the given GPUs (each in 0 .. total GPUs - 1).
  CommLayout LayoutOf(const std::vector<int>& gpus) const;
  const Cluster& cluster() const { return cluster_; }

 private:
  bool Applicable(CollectiveOp op, const CommLayout& layout, Algorithm algorithm,
                  Protocol protocol) const;
  CollectiveEstimate Time(CollectiveOp op, double bytes, const CommLayout& layout,
                          Algorithm algorithm, Protocol protocol) const;

  Cluster cluster_;
};

}  // namespace myriad::netmodel
