#include "engine/scheduler.h"

namespace myriad::emulator::engine {

void VirtualTimeScheduler::awakened(boost::fibers::context* ctx, FiberKey& key) noexcept {
  // Boost's dispatcher fiber only runs when nothing else can.
  const bool dispatcher = ctx->is_context(boost::fibers::type::dispatcher_context);
  const SimTime time = dispatcher ? kNever : key.time;
  const int rank = dispatcher ? std::numeric_limits<int>::max() : key.rank;
  ready_.push({time, rank, seq_++, ctx});
}

boost::fibers::context* VirtualTimeScheduler::pick_next() noexcept {
  if (ready_.empty()) return nullptr;
  Entry next = ready_.top();
  ready_.pop();
  return next.ctx;
}

std::pair<SimTime, int> VirtualTimeScheduler::MinReadyRank() const {
  // The main fiber is not in the queue while it asks (it is running), so the top is a rank
  // or the dispatcher (kNever, max int).
  if (ready_.empty()) return {kNever, std::numeric_limits<int>::max()};
  return {ready_.top().time, ready_.top().rank};
}

}  // namespace myriad::emulator::engine
