// Max-min fair sharing by progressive filling (Bertsekas and Gallager, "Data Networks",
// section 6.5.2): every unfrozen flow's rate rises together until a link fills (or a flow
// reaches its cap); the flows on that link freeze at its fair share; repeat. Only the flows
// connected to a change through shared links are re-shared: the others' rates cannot move.
#include "myriad/netmodel/flow_network.h"

#include <algorithm>
#include <cmath>

namespace myriad::netmodel {
namespace {

// Flows whose finish times lie this close together (seconds) end together.
constexpr double kTimeTolerance = 1e-12;

}  // namespace

FlowNetwork::FlowNetwork(std::vector<double> capacities)
    : capacity_(std::move(capacities)),
      carried_(capacity_.size(), 0.0),
      link_flows_(capacity_.size()),
      link_mark_(capacity_.size(), 0) {}

int FlowNetwork::Add(double now, const std::vector<int>& links, double bytes, double cap) {
  now_ = std::max(now_, now);
  int id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<int>(flows_.size());
    flows_.emplace_back();
    flow_mark_.push_back(0);
  }
  Flow& f = flows_[static_cast<size_t>(id)];
  f.links = links;
  f.slot.resize(links.size());
  for (size_t i = 0; i < links.size(); ++i) {
    std::vector<int>& on = link_flows_[static_cast<size_t>(links[i])];
    f.slot[i] = static_cast<int>(on.size());
    on.push_back(id);
  }
  f.remaining = bytes;
  f.cap = cap;
  f.rate = 0;
  f.updated = now_;
  f.active = true;
  f.dirty_start = true;
  ++f.version;
  if (!f.dirty) {
    f.dirty = true;
    dirty_flows_.push_back(id);
  }
  ++active_;
  ++events_;
  return id;
}

double FlowNetwork::Moved(const Flow& f, double now) {
  return now > f.updated && f.rate > 0 ? std::min(f.remaining, f.rate * (now - f.updated)) : 0;
}

void FlowNetwork::Settle(Flow& f, double now) {
  if (const double moved = Moved(f, now); moved > 0) {
    for (int link : f.links) carried_[static_cast<size_t>(link)] += moved;
    if (std::isfinite(f.remaining)) f.remaining = std::max(0.0, f.remaining - moved);
  }
  f.updated = now;
}

std::vector<double> FlowNetwork::CarriedBytes(double now) const {
  std::vector<double> carried = carried_;
  for (const Flow& f : flows_) {
    if (!f.active) continue;
    const double moved = Moved(f, now);
    for (int link : f.links) carried[static_cast<size_t>(link)] += moved;
  }
  return carried;
}

void FlowNetwork::Remove(int id, double now) {
  Flow& f = flows_[static_cast<size_t>(id)];
  Settle(f, now);
  for (size_t i = 0; i < f.links.size(); ++i) {
    const int link = f.links[i];
    std::vector<int>& on = link_flows_[static_cast<size_t>(link)];
    const int moved = on.back();
    const int at = f.slot[i];
    on[static_cast<size_t>(at)] = moved;
    on.pop_back();
    if (moved != id) {
      Flow& m = flows_[static_cast<size_t>(moved)];
      for (size_t j = 0; j < m.links.size(); ++j)
        if (m.links[j] == link && m.slot[j] == static_cast<int>(on.size())) {
          m.slot[j] = at;
          break;
        }
    }
    dirty_links_.push_back(link);
  }
  f.active = false;
  ++f.version;
  --active_;
  ++events_;
  free_.push_back(id);
}

void FlowNetwork::Schedule(int id) {
  const Flow& f = flows_[static_cast<size_t>(id)];
  if (!std::isfinite(f.remaining)) return;
  double finish;
  if (f.remaining <= 0 || std::isinf(f.rate)) {
    finish = f.updated;
  } else if (f.rate > 0) {
    finish = f.updated + f.remaining / f.rate;
  } else {
    return;  // no capacity: it waits until something changes
  }
  finishes_.push({finish, id, f.version});
}

void FlowNetwork::Recompute(double now) {
  if (dirty_flows_.empty() && dirty_links_.empty()) return;
  ++recomputations_;
  if (++mark_ == 0) {  // wrapped: clear the marks
    std::fill(link_mark_.begin(), link_mark_.end(), 0);
    std::fill(flow_mark_.begin(), flow_mark_.end(), 0);
    mark_ = 1;
  }
  // The connected set: flows reachable from the changes through shared links.
  std::vector<int> links, members;
  auto visit_link = [&](int link) {
    if (link_mark_[static_cast<size_t>(link)] == mark_) return;
    link_mark_[static_cast<size_t>(link)] = mark_;
    links.push_back(link);
  };
  auto visit_flow = [&](int id) {
    if (flow_mark_[static_cast<size_t>(id)] == mark_) return;
    flow_mark_[static_cast<size_t>(id)] = mark_;
    members.push_back(id);
    for (int link : flows_[static_cast<size_t>(id)].links) visit_link(link);
  };
  for (int id : dirty_flows_) {
    Flow& f = flows_[static_cast<size_t>(id)];
    f.dirty = false;
    if (f.active) visit_flow(id);
  }
  for (int link : dirty_links_) visit_link(link);
  dirty_flows_.clear();
  dirty_links_.clear();
  for (size_t i = 0; i < links.size(); ++i)
    for (int id : link_flows_[static_cast<size_t>(links[i])]) visit_flow(id);

  // Progressive filling over the set. Heap entries: (fair share, kind, index, version), links
  // (kind 0) and flow caps (kind 1); stale link entries carry an old version.
  struct Entry {
    double share;
    int kind;
    int index;
    std::uint64_t version;
    bool operator>(const Entry& o) const {
      if (share != o.share) return share > o.share;
      if (kind != o.kind) return kind > o.kind;
      return index > o.index;
    }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  // Per link of the set: remaining capacity, unfrozen flows, version; indexed through
  // position_ (link id to index in `links`).
  std::vector<double> remaining(links.size());
  std::vector<int> count(links.size());
  std::vector<std::uint64_t> version(links.size(), 0);
  position_.resize(capacity_.size());
  for (size_t i = 0; i < links.size(); ++i) {
    const int link = links[i];
    position_[static_cast<size_t>(link)] = static_cast<int>(i);
    remaining[i] = capacity_[static_cast<size_t>(link)];
    count[i] = static_cast<int>(link_flows_[static_cast<size_t>(link)].size());
    if (count[i] > 0) heap.push({remaining[i] / count[i], 0, link, 0});
  }
  old_rate_.resize(flows_.size());
  for (int id : members) {
    Flow& f = flows_[static_cast<size_t>(id)];
    Settle(f, now);
    old_rate_[static_cast<size_t>(id)] = f.dirty_start ? -1 : f.rate;
    f.dirty_start = false;
    f.rate = -1;  // unfrozen
    if (std::isfinite(f.cap)) heap.push({f.cap, 1, id, 0});
  }
  auto freeze = [&](int id, double rate) {
    Flow& f = flows_[static_cast<size_t>(id)];
    f.rate = rate;
    for (int link : f.links) {
      const auto i = static_cast<size_t>(position_[static_cast<size_t>(link)]);
      remaining[i] -= rate;
      --count[i];
      ++version[i];
      if (count[i] > 0) heap.push({std::max(0.0, remaining[i]) / count[i], 0, link, version[i]});
    }
  };
  while (!heap.empty()) {
    const Entry e = heap.top();
    heap.pop();
    if (e.kind == 1) {
      if (flows_[static_cast<size_t>(e.index)].rate < 0) freeze(e.index, e.share);
      continue;
    }
    const auto i = static_cast<size_t>(position_[static_cast<size_t>(e.index)]);
    if (e.version != version[i] || count[i] == 0) continue;
    const double share = std::max(0.0, e.share);
    for (int id : link_flows_[static_cast<size_t>(e.index)])
      if (flows_[static_cast<size_t>(id)].rate < 0) freeze(id, share);
  }
  // A flow whose rate did not change keeps its finish time (and its heap entry).
  for (int id : members) {
    Flow& f = flows_[static_cast<size_t>(id)];
    if (f.rate < 0) f.rate = kUnbounded;  // no link and no cap
    if (f.rate == old_rate_[static_cast<size_t>(id)]) continue;
    ++f.version;
    Schedule(id);
  }
  // Drop stale entries once they outnumber the live ones.
  if (finishes_.size() > 2 * static_cast<size_t>(active_) + 1024) {
    std::vector<Finish> live;
    while (!finishes_.empty()) {
      const Finish& top = finishes_.top();
      const Flow& f = flows_[static_cast<size_t>(top.flow)];
      if (f.active && f.version == top.version) live.push_back(top);
      finishes_.pop();
    }
    for (const Finish& e : live) finishes_.push(e);
  }
}

double FlowNetwork::NextFinish() {
  Recompute(now_);
  while (!finishes_.empty()) {
    const Finish& top = finishes_.top();
    const Flow& f = flows_[static_cast<size_t>(top.flow)];
    if (f.active && f.version == top.version) return top.time;
    finishes_.pop();
  }
  return kUnbounded;
}

void FlowNetwork::AdvanceTo(double now, std::vector<int>* finished) {
  while (true) {
    const double t = NextFinish();
    if (!(t <= now + kTimeTolerance)) break;
    const double at = std::max(t, now_);
    // Everything finishing at this moment ends together, then the links are re-shared.
    while (!finishes_.empty()) {
      const Finish top = finishes_.top();
      const Flow& f = flows_[static_cast<size_t>(top.flow)];
      if (!f.active || f.version != top.version) {
        finishes_.pop();
        continue;
      }
      if (top.time > at + kTimeTolerance) break;
      finishes_.pop();
      Remove(top.flow, at);
      finished->push_back(top.flow);
    }
    now_ = at;
    Recompute(now_);
  }
  now_ = std::max(now_, now);
}

double FlowNetwork::rate(int flow) {
  Recompute(now_);
  return flows_[static_cast<size_t>(flow)].rate;
}

}  // namespace myriad::netmodel
