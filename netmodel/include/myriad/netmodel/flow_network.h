// Flows on links with max-min fair sharing (progressive filling), advanced in time: the core
// of the flow-level network model. Rates are recomputed when flows start and end, only for
// the flows that share links (transitively) with the ones that changed. Time in seconds,
// sizes in bytes, rates in bytes/s. Deterministic: the same calls give the same rates and
// finish times, bit for bit.
#pragma once

#include <cstdint>
#include <limits>
#include <queue>
#include <vector>

namespace myriad::netmodel {

inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();

class FlowNetwork {
 public:
  explicit FlowNetwork(std::vector<double> capacities);

  // Starts a flow of `bytes` (kUnbounded: it never ends, as background traffic) over `links`
  // at time `now`, at most `cap` bytes/s. Returns its id (ids of finished flows are reused).
  int Add(double now, const std::vector<int>& links, double bytes, double cap = kUnbounded);
  // The earliest time an active flow finishes, or kUnbounded.
  double NextFinish();
  // Moves time to `now` (not before the last call), ending the flows that finish by then (in
  // time order, each end re-sharing the links); appends their ids to `finished`.
  void AdvanceTo(double now, std::vector<int>* finished);
  // Current rate of an active flow.
  double rate(int flow);
  int active() const { return active_; }
  // Flow starts and ends handled so far.
  std::uint64_t events() const { return events_; }
  // Progressive-filling passes run (each over one set of connected flows).
  std::uint64_t recomputations() const { return recomputations_; }
  // Bytes each link has carried by `now` (not before the last call): every flow's bytes on
  // every link of its path, background flows' included.
  std::vector<double> CarriedBytes(double now) const;

 private:
  struct Flow {
    std::vector<int> links;
    std::vector<int> slot;  // this flow's index in link_flows_[links[i]]
    double remaining = 0;
    double cap = kUnbounded;
    double rate = 0;
    double updated = 0;  // time `remaining` was last settled
    std::uint64_t version = 0;
    bool active = false;
    bool dirty = false;
    bool dirty_start = false;  // added since the last re-share: needs a finish entry
  };
  struct Finish {
    double time;
    int flow;
    std::uint64_t version;
    bool operator>(const Finish& o) const { return time != o.time ? time > o.time : flow > o.flow; }
  };

  // Bytes `f` has moved since it was last settled, by `now`.
  static double Moved(const Flow& f, double now);
  void Settle(Flow& f, double now);
  void Remove(int id, double now);
  // Re-shares the links of every flow connected to a dirty flow or link, as of `now`.
  void Recompute(double now);
  void Schedule(int id);

  std::vector<double> capacity_;
  std::vector<double> carried_;               // bytes per link, as of each flow's last Settle
  std::vector<std::vector<int>> link_flows_;  // active flows on each link
  std::vector<Flow> flows_;
  std::vector<int> free_;
  std::vector<int> dirty_flows_;
  std::vector<int> dirty_links_;
  std::priority_queue<Finish, std::vector<Finish>, std::greater<Finish>> finishes_;
  double now_ = 0;
  int active_ = 0;
  std::uint64_t events_ = 0;
  std::uint64_t recomputations_ = 0;
  // Scratch of Recompute, kept to avoid reallocation.
  std::vector<std::uint32_t> link_mark_, flow_mark_;
  std::vector<int> position_;     // a link's index in the set being re-shared
  std::vector<double> old_rate_;  // a flow's rate before the re-share
  std::uint32_t mark_ = 0;
};

}  // namespace myriad::netmodel
