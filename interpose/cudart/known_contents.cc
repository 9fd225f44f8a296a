#include "cudart/known_contents.h"

#include <atomic>
#include <iterator>
#include <map>
#include <mutex>

#include "cudart/client.h"
#include "protocol/wire.h"

namespace myriad::shim {
namespace {

struct Range {
  std::uintptr_t end = 0;
  std::uint32_t id = 0;
};

// Ranges never overlap: a new one replaces what it covers.
class Registry {
 public:
  static Registry& Get() {
    static auto* registry = new Registry();  // never destroyed: used until exit
    return *registry;
  }

  // Removes every range that overlaps [start, end).
  void Forget(std::uintptr_t start, std::uintptr_t end) {
    if (count_.load(std::memory_order_relaxed) == 0) return;
    std::lock_guard<RawMutex> lock(mu_);
    auto it = ranges_.upper_bound(start);
    if (it != ranges_.begin() && std::prev(it)->second.end > start) --it;
    while (it != ranges_.end() && it->first < end) it = ranges_.erase(it);
    count_.store(ranges_.size(), std::memory_order_relaxed);
  }

  std::uint32_t Add(std::uintptr_t start, std::uintptr_t end) {
    Forget(start, end);
    std::lock_guard<RawMutex> lock(mu_);
    const std::uint32_t id = ++next_id_;
    ranges_[start] = Range{end, id};
    count_.store(ranges_.size(), std::memory_order_relaxed);
    return id;
  }

  bool Find(std::uintptr_t p, std::uint32_t* id, std::uint32_t* offset) {
    if (count_.load(std::memory_order_relaxed) == 0) return false;  // the usual case: none
    std::lock_guard<RawMutex> lock(mu_);
    auto it = ranges_.upper_bound(p);
    if (it == ranges_.begin()) return false;
    --it;
    if (p >= it->second.end) return false;
    *id = it->second.id;
    *offset = static_cast<std::uint32_t>(p - it->first);
    return true;
  }

 private:
  RawMutex mu_;
  std::map<std::uintptr_t, Range> ranges_;  // by start
  std::atomic<std::size_t> count_{0};
  std::uint32_t next_id_ = 0;
};

}  // namespace

void ContentsCopied(const void* dst, std::size_t bytes, bool from_host) {
  const auto start = reinterpret_cast<std::uintptr_t>(dst);
  if (!from_host || bytes == 0 || bytes > wire::kMaxKnownContents || !GetSettings().under_myriad) {
    Registry::Get().Forget(start, start + bytes);
    return;
  }
  const std::uint32_t id = Registry::Get().Add(start, start + bytes);
  if (!SendContents(id, dst, bytes)) Registry::Get().Forget(start, start + bytes);
}

void ContentsForgotten(const void* at, std::size_t bytes) {
  const auto start = reinterpret_cast<std::uintptr_t>(at);
  Registry::Get().Forget(start, start + bytes);
}

bool ContentsAt(const void* p, std::uint32_t* id, std::uint32_t* offset) {
  return Registry::Get().Find(reinterpret_cast<std::uintptr_t>(p), id, offset);
}

}  // namespace myriad::shim
