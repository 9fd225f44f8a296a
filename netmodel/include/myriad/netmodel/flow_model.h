// The flow-level network model ("flow" fidelity): each collective becomes the flows its
// algorithm sends on the cluster's link graph, all collectives in flight share the links by
// max-min fairness, and a collective ends when its last flow does, plus the start-up latency
// and pipeline fill of the analytical model. Each flow is capped at the rate the analytical
// model gives it, so an uncontended collective takes the analytical time wherever the link
// graph agrees with the analytical model's bottleneck; contention (other collectives, other
// jobs' traffic, oversubscribed or failed links, ECMP collisions) slows it down.
// docs/network.md describes the traffic of each algorithm.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "myriad/netmodel/collective.h"
#include "myriad/netmodel/flow_network.h"
#include "myriad/netmodel/topology.h"
#include "myriad/status.h"

namespace myriad::netmodel {

enum class Fidelity { kAnalytical, kFlow };
std::string_view ToString(Fidelity fidelity);
Result<Fidelity> ParseFidelity(std::string_view name);  // "analytical" or "flow"

// A link (or every link matching a pattern) running at a fraction of its rate; 0 fails it.
struct LinkChange {
  std::string pattern;  // link names, '*' matching any run of characters (docs/network.md)
  double fraction = 1;
};

// Traffic of other jobs: a fixed share of the matched links' capacity, or a collective
// pattern repeated without end on the given GPUs, which takes its max-min fair share.
struct BackgroundTraffic {
  std::string links;  // with `load`: the links it loads
  double load = 0;    // fraction of their capacity, in [0, 1)
  // Or: the traffic of `op` (Ring for AllReduce, AllGather, ReduceScatter; direct for
  // AllToAll) among `gpus`, running all along.
  CollectiveOp op = CollectiveOp::kAllReduce;
  std::vector<int> gpus;
};

// The routing (ECMP or adaptive) and queue pairs per connection come from the cluster's
// scale_out.
struct FlowOptions {
  std::vector<LinkChange> links;
  std::vector<BackgroundTraffic> background;
};

// One flow of a collective: `bytes` from GPU `src` to GPU `dst`.
struct FlowSpec {
  int src = 0;
  int dst = 0;
  double bytes = 0;
};

// The flows algorithm `estimate.algorithm` sends for `request` among `gpus` (communicator
// order = ring order), bytes as the wire carries them (data over the protocol's efficiency).
std::vector<FlowSpec> CollectiveTraffic(const Cluster& cluster, const CollectiveRequest& request,
                                        const CollectiveEstimate& estimate,
                                        const std::vector<int>& gpus);

class FlowModel {
 public:
  // The link graph of `cluster` with the options' routing, link changes and background
  // traffic. Errors name the bad pattern, GPU or link.
  static Result<std::unique_ptr<FlowModel>> Create(const Cluster& cluster,
                                                   const FlowOptions& options);

  struct Done {
    std::uint64_t id = 0;
    double end_us = 0;          // last flow's end + latency + pipeline fill
    double uncontended_us = 0;  // what it would have taken alone (the analytical time)
    double time_us = 0;         // end_us - start
  };

  // Starts collective `request` (timed alone by `estimate`) among `gpus` at `now_us`. A
  // collective without network traffic (one rank) is done at now + estimate.time_us.
  Result<std::uint64_t> Start(double now_us, const CollectiveRequest& request,
                              const CollectiveEstimate& estimate, const std::vector<int>& gpus);
  // A point-to-point transfer of `bytes` from `src` to `dst` (timed alone by `estimate`).
  Result<std::uint64_t> StartSend(double now_us, int src, int dst, double bytes,
                                  const CollectiveEstimate& estimate);
  // When the network next changes (a flow ends), or kUnbounded.
  double NextEventUs();
  // Moves to `now_us`; appends the transfers whose flows are all done by then.
  void AdvanceTo(double now_us, std::vector<Done>* done);

  const Topology& topology() const { return topology_; }
  // Bytes each link of topology() has carried by `now_us` (other jobs' traffic included).
  std::vector<double> CarriedBytes(double now_us) const {
    return network_->CarriedBytes(now_us * 1e-6);
  }
  const FlowNetwork& network() const { return *network_; }
  int transfers_in_flight() const { return static_cast<int>(transfers_.size()); }

 private:
  struct Transfer {
    double start_us = 0;
    double tail_us = 0;  // latency + pipeline fill, after the last flow
    double uncontended_us = 0;
    int flows_left = 0;
  };
  FlowModel(Topology topology);
  // `route_key` picks the flows' ECMP paths (with each flow's index). Under ECMP a flow that
  // crosses a spine is `connections` x queue pairs per connection subflows, each hashed on
  // its own, as NCCL's channels and QPs are.
  Result<std::uint64_t> Launch(double now_us, const std::vector<FlowSpec>& flows,
                               const CollectiveEstimate& estimate, std::uint64_t route_key,
                               int connections);

  Topology topology_;
  std::unique_ptr<FlowNetwork> network_;
  std::unordered_map<std::uint64_t, Transfer> transfers_;
  std::unordered_map<int, std::uint64_t> flow_owner_;  // flow id -> transfer
  std::vector<Done> ready_;  // transfers without flows, done at their start
  std::uint64_t next_id_ = 1;
  double now_us_ = 0;
  std::vector<int> route_;
  std::vector<int> finished_;
};

}  // namespace myriad::netmodel
