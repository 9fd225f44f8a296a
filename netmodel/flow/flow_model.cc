// Collectives as flows on the link graph (netmodel/flow_model.h, docs/network.md).
#include "myriad/netmodel/flow_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "collective/nccl_constants.h"

namespace myriad::netmodel {

std::string_view ToString(Fidelity fidelity) {
  return fidelity == Fidelity::kFlow ? "flow" : "analytical";
}

Result<Fidelity> ParseFidelity(std::string_view name) {
  if (name == "analytical") return Fidelity::kAnalytical;
  if (name == "flow") return Fidelity::kFlow;
  return Status::InvalidArgument("fidelity must be \"analytical\" or \"flow\", got '" +
                                 std::string(name) + "'");
}

namespace {

// The communicator's GPUs grouped by scale-up domain, domains in order of first appearance
// and GPUs in communicator order within each.
struct Domains {
  std::vector<std::vector<int>> members;
  std::vector<int> of;  // per communicator position: index into members
};

Domains GroupByDomain(const Cluster& cluster, const std::vector<int>& gpus) {
  Domains d;
  std::unordered_map<int, int> index_of;  // domain id -> index into members
  for (int gpu : gpus) {
    const int domain = gpu / cluster.scale_up.domain_size;
    const auto [it, inserted] = index_of.emplace(domain, static_cast<int>(d.members.size()));
    if (inserted) d.members.emplace_back();
    d.members[static_cast<size_t>(it->second)].push_back(gpu);
    d.of.push_back(it->second);
  }
  return d;
}

}  // namespace

std::vector<FlowSpec> CollectiveTraffic(const Cluster& cluster, const CollectiveRequest& request,
                                        const CollectiveEstimate& estimate,
                                        const std::vector<int>& gpus) {
  namespace k = nccl;
  std::vector<FlowSpec> out;
  const int n = static_cast<int>(gpus.size());
  if (n < 2 || request.bytes == 0) return out;
  const double S = static_cast<double>(request.bytes);
  const CollectiveOp op = request.op;
  const double eff = k::kProtocolEfficiency[static_cast<int>(estimate.protocol)];
  const Domains dom = GroupByDomain(cluster, gpus);
  const int domains = static_cast<int>(dom.members.size());
  const int domain_size = cluster.scale_up.domain_size;
  auto same_domain = [&](int a, int b) { return a / domain_size == b / domain_size; };
  auto push = [&](int a, int b, double bytes) {
    if (a != b && bytes > 0) out.push_back({a, b, bytes});
  };
  // Between two domains a collective's channels use every rail: `bytes` from domain `da` to
  // domain `db` leaves over each of da's GPUs in turn, to the GPU of db at the same position.
  auto spread = [&](int da, int db, double bytes) {
    const std::vector<int>& a = dom.members[static_cast<size_t>(da)];
    const std::vector<int>& b = dom.members[static_cast<size_t>(db)];
    for (size_t r = 0; r < a.size(); ++r) push(a[r], b[r % b.size()], bytes / a.size());
  };
  auto link = [&](int i, int j, double bytes) {
    const int a = gpus[static_cast<size_t>(i)], b = gpus[static_cast<size_t>(j)];
    if (same_domain(a, b)) {
      push(a, b, bytes);
    } else {
      spread(dom.of[static_cast<size_t>(i)], dom.of[static_cast<size_t>(j)], bytes);
    }
  };
  // Double binary tree over the domains (heap order and its mirror), each tree carrying half of
  // `bytes` up and down its edges: an interior node of one tree (a leaf of the other) sends
  // and receives 2 x `bytes` in all, as NCCL's reduce-then-broadcast trees do.
  auto tree_between_domains = [&](double bytes) {
    for (int t = 0; t < 2; ++t)
      for (int i = 1; i < domains; ++i) {
        int child = i, parent = (i - 1) / 2;
        if (t == 1) {
          child = domains - 1 - child;
          parent = domains - 1 - parent;
        }
        spread(child, parent, bytes / 2);
        spread(parent, child, bytes / 2);
      }
  };
  switch (estimate.algorithm) {
    case Algorithm::kRing:
    case Algorithm::kPat: {
      // Every rank sends its ring successor the ring's bytes (a chain for Broadcast/Reduce).
      double per_rank = S;
      if (op == CollectiveOp::kAllReduce) per_rank = 2.0 * (n - 1) / n * S;
      if (op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter)
        per_rank = 1.0 * (n - 1) / n * S;
      double wire = per_rank / eff;
      if (estimate.algorithm == Algorithm::kPat) wire /= k::kPatEfficiency;
      const bool chain = op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce;
      for (int i = 0; i < (chain ? n - 1 : n); ++i) link(i, (i + 1) % n, wire);
      break;
    }
    case Algorithm::kTree: {
      // A chain inside each domain (the buffer up for the reduce, down for the broadcast),
      // the double binary tree between domains.
      const double wire = S / (eff * k::kTreeEfficiency);
      for (const std::vector<int>& m : dom.members)
        for (size_t i = 0; i + 1 < m.size(); ++i) {
          push(m[i + 1], m[i], wire);
          push(m[i], m[i + 1], wire);
        }
      tree_between_domains(wire);
      break;
    }
    case Algorithm::kNvls:
    case Algorithm::kNvlsTree:
    case Algorithm::kCollNetDirect:
    case Algorithm::kCollNetChain: {
      // Inside each domain: NVLS moves S (+ S/g for AllReduce) through the switch each way per
      // GPU; CollNet reduce-scatters and all-gathers (2 (g-1)/g S). Shown as one flow per GPU
      // to its neighbour, which loads each GPU's port once each way.
      const bool nvls =
          estimate.algorithm == Algorithm::kNvls || estimate.algorithm == Algorithm::kNvlsTree;
      for (const std::vector<int>& m : dom.members) {
        const double g = static_cast<double>(m.size());
        if (m.size() < 2) continue;
        const double traffic =
            nvls ? (op == CollectiveOp::kAllReduce ? 1 + 1 / g : 1.0) / k::kNvlsEfficiency
                 : 2 * (g - 1) / g;
        for (size_t i = 0; i < m.size(); ++i) push(m[i], m[(i + 1) % m.size()], traffic * S);
      }
      if (domains > 1) {
        if (estimate.algorithm == Algorithm::kNvlsTree) {
          tree_between_domains(S / k::kTreeEfficiency);
        } else {
          // In-network reduction: every GPU sends its slice to the switch and gets it back
          // reduced, S / g each way per rail.
          for (int d = 0; d < domains; ++d) spread(d, (d + 1) % domains, S);
        }
      }
      break;
    }
    case Algorithm::kDirect: {
      switch (op) {
        case CollectiveOp::kAllToAll: {
          // S/n to every peer; between domains aggregated per rail.
          const double chunk = S / n / eff;
          for (const std::vector<int>& m : dom.members)
            for (int a : m)
              for (int b : m) push(a, b, chunk);
          for (int da = 0; da < domains; ++da)
            for (int db = 0; db < domains; ++db) {
              if (da == db) continue;
              const auto& a = dom.members[static_cast<size_t>(da)];
              const auto& b = dom.members[static_cast<size_t>(db)];
              for (size_t r = 0; r < a.size(); ++r)
                push(a[r], b[r % b.size()], chunk * static_cast<double>(b.size()));
            }
          break;
        }
        case CollectiveOp::kGather:
          for (int i = 1; i < n; ++i) push(gpus[static_cast<size_t>(i)], gpus[0], S / n / eff);
          break;
        case CollectiveOp::kScatter:
          for (int i = 1; i < n; ++i) push(gpus[0], gpus[static_cast<size_t>(i)], S / n / eff);
          break;
        default:  // SendRecv: every rank to the next
          for (int i = 0; i < n; ++i)
            push(gpus[static_cast<size_t>(i)], gpus[static_cast<size_t>((i + 1) % n)], S / eff);
          break;
      }
      break;
    }
  }
  return out;
}

FlowModel::FlowModel(Topology topology) : topology_(std::move(topology)) {}

Result<std::unique_ptr<FlowModel>> FlowModel::Create(const Cluster& cluster,
                                                     const FlowOptions& options) {
  Topology topology = Topology::Build(cluster);
  auto matching = [&](const std::string& pattern) -> Result<std::vector<int>> {
    std::vector<int> ids = topology.Match(pattern);
    if (ids.empty())
      return Status::InvalidArgument(
          "no link matches '" + pattern +
          "' (links are named gpuN.tx, gpuN.rx, nicN.tx, nicN.rx, leafN.upM, leafN.downM)");
    return ids;
  };
  for (const LinkChange& change : options.links) {
    if (!(change.fraction >= 0 && change.fraction <= 1))
      return Status::InvalidArgument("link '" + change.pattern +
                                     "': rate fraction must be in [0, 1]");
    Result<std::vector<int>> ids = matching(change.pattern);
    if (!ids.ok()) return ids.status();
    for (int id : *ids) {
      if (change.fraction == 0) {
        topology.Fail(id);
      } else {
        topology.Degrade(id, change.fraction);
      }
    }
  }
  std::vector<const BackgroundTraffic*> jobs;
  for (const BackgroundTraffic& bg : options.background) {
    if (!bg.links.empty()) {
      if (!(bg.load >= 0 && bg.load < 1))
        return Status::InvalidArgument("background load on '" + bg.links + "' must be in [0, 1)");
      Result<std::vector<int>> ids = matching(bg.links);
      if (!ids.ok()) return ids.status();
      for (int id : *ids) topology.Degrade(id, 1 - bg.load);
      continue;
    }
    for (int gpu : bg.gpus)
      if (gpu < 0 || gpu >= cluster.total_gpus())
        return Status::InvalidArgument("background traffic on GPU " + std::to_string(gpu) +
                                       ", outside the cluster's " +
                                       std::to_string(cluster.total_gpus()) + " GPUs");
    if (bg.gpus.size() < 2)
      return Status::InvalidArgument("background traffic needs at least 2 GPUs");
    jobs.push_back(&bg);
  }
  std::vector<double> capacities;
  for (int id = 0; id < topology.link_count(); ++id)
    capacities.push_back(topology.failed(id) ? 0.0 : topology.link(id).capacity);
  auto model = std::unique_ptr<FlowModel>(new FlowModel(std::move(topology)));
  model->network_ = std::make_unique<FlowNetwork>(std::move(capacities));
  // Other jobs' collectives: their flows never end and take their fair share.
  for (const BackgroundTraffic* job : jobs) {
    CollectiveRequest request;
    request.op = job->op;
    request.bytes = 1 << 30;
    request.ranks = static_cast<int>(job->gpus.size());
    CollectiveEstimate shape;
    shape.algorithm = job->op == CollectiveOp::kAllToAll ? Algorithm::kDirect : Algorithm::kRing;
    shape.protocol = Protocol::kSimple;
    const std::vector<FlowSpec> flows = CollectiveTraffic(cluster, request, shape, job->gpus);
    for (size_t i = 0; i < flows.size(); ++i) {
      MYRIAD_RETURN_IF_ERROR(
          model->topology_.Route(flows[i].src, flows[i].dst, 0xb9c0ULL * (i + 1), &model->route_));
      model->network_->Add(0, model->route_, kUnbounded);
    }
  }
  return model;
}

Result<std::uint64_t> FlowModel::Launch(double now_us, const std::vector<FlowSpec>& flows,
                                        const CollectiveEstimate& estimate, std::uint64_t route_key,
                                        int connections) {
  const std::uint64_t id = next_id_++;
  Transfer t;
  t.start_us = now_us;
  t.tail_us = estimate.latency_us + estimate.pipeline_fill_us;
  t.uncontended_us = estimate.time_us;
  const double transfer_s = estimate.transfer_us * 1e-6;
  const bool ecmp = topology_.routing() == Routing::kEcmp;
  const int subflows = std::max(1, connections) * topology_.cluster().scale_out.qps_per_connection;
  auto crosses_spine = [&] {
    return std::any_of(route_.begin(), route_.end(),
                       [&](int link) { return topology_.IsSpineLink(link); });
  };
  for (size_t i = 0; i < flows.size(); ++i) {
    const FlowSpec& f = flows[i];
    const std::uint64_t key = route_key * 1000003ULL + i;
    MYRIAD_RETURN_IF_ERROR(topology_.Route(f.src, f.dst, key, &route_));
    // Capped at the rate the analytical model gives it: alone, every flow ends with the
    // analytical transfer time unless a link of the graph is narrower.
    const double cap = transfer_s > 0 ? f.bytes / transfer_s : kUnbounded;
    const int parts = ecmp && subflows > 1 && crosses_spine() ? subflows : 1;
    for (int part = 0; part < parts; ++part) {
      if (part > 0)
        MYRIAD_RETURN_IF_ERROR(topology_.Route(
            f.src, f.dst, key + static_cast<std::uint64_t>(part) * 0x9e3779b97f4a7c15ULL, &route_));
      flow_owner_[network_->Add(now_us * 1e-6, route_, f.bytes / parts, cap / parts)] = id;
      ++t.flows_left;
    }
  }
  if (t.flows_left == 0) {
    ready_.push_back({id, now_us + estimate.time_us, estimate.time_us, estimate.time_us});
  } else {
    transfers_.emplace(id, t);
  }
  now_us_ = now_us;
  return id;
}

Result<std::uint64_t> FlowModel::Start(double now_us, const CollectiveRequest& request,
                                       const CollectiveEstimate& estimate,
                                       const std::vector<int>& gpus) {
  // ECMP hashes a connection, not a call: a communicator's flows keep their paths from call to
  // call (collisions persist, as on a real fabric), whatever else ran before.
  std::uint64_t key = 1469598103934665603ULL;  // FNV-1a over the GPUs
  for (int gpu : gpus) key = (key ^ static_cast<std::uint64_t>(gpu)) * 1099511628211ULL;
  // Each of a collective's channels is a connection of its own between two domains.
  const int per_domain =
      std::max(1, std::min(request.ranks, topology_.cluster().scale_up.domain_size));
  return Launch(now_us, CollectiveTraffic(topology_.cluster(), request, estimate, gpus), estimate,
                key, estimate.channels / per_domain);
}

Result<std::uint64_t> FlowModel::StartSend(double now_us, int src, int dst, double bytes,
                                           const CollectiveEstimate& estimate) {
  const double eff = nccl::kProtocolEfficiency[static_cast<int>(estimate.protocol)];
  std::vector<FlowSpec> flows;
  if (src != dst && bytes > 0) flows.push_back({src, dst, bytes / eff});
  return Launch(now_us, flows, estimate,
                (static_cast<std::uint64_t>(src) << 32) ^ static_cast<std::uint64_t>(dst),
                nccl::kP2pChannelsPerNetPeer);
}

double FlowModel::NextEventUs() {
  if (!ready_.empty()) return now_us_;
  const double t = network_->NextFinish();
  return std::isfinite(t) ? t * 1e6 : kUnbounded;
}

void FlowModel::AdvanceTo(double now_us, std::vector<Done>* done) {
  now_us_ = std::max(now_us_, now_us);
  done->insert(done->end(), ready_.begin(), ready_.end());
  ready_.clear();
  finished_.clear();
  network_->AdvanceTo(now_us * 1e-6, &finished_);
  for (int flow : finished_) {
    auto owner = flow_owner_.find(flow);
    if (owner == flow_owner_.end()) continue;  // background traffic never ends
    const std::uint64_t id = owner->second;
    flow_owner_.erase(owner);
    auto it = transfers_.find(id);
    if (--it->second.flows_left > 0) continue;
    const Transfer& t = it->second;
    const double end = now_us + t.tail_us;
    done->push_back({id, end, t.uncontended_us, end - t.start_us});
    transfers_.erase(it);
  }
}

}  // namespace myriad::netmodel
