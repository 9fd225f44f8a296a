// The discrete-event queue, ordered by (time, sequence): events at the same virtual time run
// in the order they were scheduled, which keeps every run identical. A live thread's poll is
// the exception: it is answered after every other event of its time, including those the
// events of that time schedule (a record that completes when the kernel before it does), so
// its answer says what is done at that time whenever in real time the poll arrived.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "myriad/emulator/op.h"

namespace myriad::emulator::engine {

enum class EventType : std::uint8_t {
  kStart,     // a stream's head op may start now
  kComplete,  // a stream's head op finishes now
  kWake,      // a rank's host thread resumes now (event query)
  kNetwork,   // the flow model's next flow ends now (stale unless generation is current)
  kPoll,      // a live thread's poll is answered now (generation: the poll's id)
};

struct Event {
  SimTime time;
  std::uint64_t seq;
  EventType type;
  int rank;
  int slot;                  // stream slot within the rank (kStart, kComplete)
  std::uint64_t generation;  // kComplete: stale unless it equals the stream's generation
};

class EventQueue {
 public:
  void Push(SimTime time, EventType type, int rank, int slot, std::uint64_t generation = 0) {
    heap_.push({time, seq_++, type, rank, slot, generation});
  }
  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.top(); }
  Event Pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }
  std::uint64_t processed() const { return seq_; }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      const bool a_poll = a.type == EventType::kPoll, b_poll = b.type == EventType::kPoll;
      return a_poll != b_poll ? a_poll : a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::uint64_t seq_ = 0;
};

}  // namespace myriad::emulator::engine
