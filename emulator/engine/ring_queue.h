// A FIFO on one growing array: a stream's queue of device ops. Unlike std::deque (a 512-byte
// block per two ops here) it allocates only when it grows. push_back may move the elements:
// hold no reference to one across a push.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace myriad::emulator::engine {

template <typename T>
class RingQueue {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  T& front() { return slots_[head_]; }
  const T& front() const { return slots_[head_]; }
  T& back() { return slots_[(head_ + size_ - 1) & (slots_.size() - 1)]; }
  void push_back(T&& value) {
    if (size_ == slots_.size()) Grow();
    slots_[(head_ + size_) & (slots_.size() - 1)] = std::move(value);
    ++size_;
  }
  void pop_front() {
    head_ = (head_ + 1) & (slots_.size() - 1);
    --size_;
  }

 private:
  void Grow() {
    std::vector<T> bigger(slots_.empty() ? 4 : slots_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i)
      bigger[i] = std::move(slots_[(head_ + i) & (slots_.size() - 1)]);
    slots_ = std::move(bigger);
    head_ = 0;
  }
  std::vector<T> slots_;  // capacity is a power of two
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace myriad::emulator::engine
