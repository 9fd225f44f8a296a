// The fiber scheduler: among ready fibers, resume the one with the smallest (virtual time,
// rank). The engine's main fiber takes part with the time of the next pending event, so no
// rank runs ahead of an event that could change what it observes.
#pragma once

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/context.hpp>
#include <boost/fiber/properties.hpp>
#include <cstdint>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

#include "myriad/emulator/op.h"

namespace myriad::emulator::engine {

inline constexpr SimTime kNever = std::numeric_limits<SimTime>::max();

// Scheduling key of one fiber: its virtual time and its rank (-1 for the engine's main fiber,
// which wins ties so events at time T are processed before ranks at T resume).
class FiberKey : public boost::fibers::fiber_properties {
 public:
  explicit FiberKey(boost::fibers::context* ctx) : fiber_properties(ctx) {}
  SimTime time = 0;
  int rank = std::numeric_limits<int>::max();  // until the fiber says which rank it is
};

class VirtualTimeScheduler : public boost::fibers::algo::algorithm_with_properties<FiberKey> {
 public:
  void awakened(boost::fibers::context* ctx, FiberKey& key) noexcept override;
  boost::fibers::context* pick_next() noexcept override;
  bool has_ready_fibers() const noexcept override { return !ready_.empty(); }
  void suspend_until(std::chrono::steady_clock::time_point const&) noexcept override {}
  void notify() noexcept override {}

  // Smallest (time, rank) among ready rank fibers (the main fiber excluded), or
  // (kNever, max int) when none is ready.
  std::pair<SimTime, int> MinReadyRank() const;

 private:
  struct Entry {
    SimTime time;
    int rank;
    std::uint64_t seq;  // FIFO among equal keys: deterministic
    boost::fibers::context* ctx;
    bool operator>(const Entry& o) const {
      if (time != o.time) return time > o.time;
      if (rank != o.rank) return rank > o.rank;
      return seq > o.seq;
    }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready_;
  std::uint64_t seq_ = 0;
};

}  // namespace myriad::emulator::engine
