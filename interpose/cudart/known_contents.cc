#include "cudart/known_contents.h"

#include <algorithm>
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
    starts_[id] = start;
    if (starts_.size() > kMaxStarts) starts_.erase(starts_.begin());
    count_.store(ranges_.size(), std::memory_order_relaxed);
    return id;
  }

  bool Find(std::uintptr_t p, std::uint32_t* id, std::uint32_t* offset,
            std::uintptr_t* end = nullptr) {
    if (count_.load(std::memory_order_relaxed) == 0) return false;  // the usual case: none
    std::lock_guard<RawMutex> lock(mu_);
    auto it = ranges_.upper_bound(p);
    if (it == ranges_.begin()) return false;
    --it;
    if (p >= it->second.end) return false;
    *id = it->second.id;
    *offset = static_cast<std::uint32_t>(p - it->first);
    if (end) *end = it->second.end;
    return true;
  }

  // Where contents `id` began (they may be forgotten since).
  bool StartOf(std::uint32_t id, std::uintptr_t* start) {
    std::lock_guard<RawMutex> lock(mu_);
    const auto it = starts_.find(id);
    if (it == starts_.end()) return false;
    *start = it->second;
    return true;
  }

 private:
  RawMutex mu_;
  std::map<std::uintptr_t, Range> ranges_;  // by start
  std::atomic<std::size_t> count_{0};
  std::uint32_t next_id_ = 0;
  // Each id's start, for launches recorded while it was known; the oldest dropped first.
  static constexpr std::size_t kMaxStarts = 1 << 20;
  std::map<std::uint32_t, std::uintptr_t> starts_;
};

}  // namespace

void ContentsCopied(const void* dst, std::size_t bytes, bool real) {
  const auto start = reinterpret_cast<std::uintptr_t>(dst);
  if (!real || bytes == 0 || bytes > wire::kMaxKnownContents || !GetSettings().under_myriad) {
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

bool ContentsCover(const void* p, std::size_t bytes) {
  std::uint32_t id = 0, offset = 0;
  std::uintptr_t end = 0;
  return Registry::Get().Find(reinterpret_cast<std::uintptr_t>(p), &id, &offset, &end) &&
         reinterpret_cast<std::uintptr_t>(p) + bytes <= end;
}

bool ContentsAt(const void* p, std::uint32_t* id, std::uint32_t* offset) {
  return Registry::Get().Find(reinterpret_cast<std::uintptr_t>(p), id, offset);
}

void ContentsNow(wire::WireOp* op) {
  const std::size_t refs = std::min<std::size_t>(op->content_ref_count, std::size(op->content_id));
  std::size_t kept = 0;
  for (std::size_t r = 0; r < refs; ++r) {
    std::uintptr_t start = 0;
    std::uint32_t id = 0, offset = 0;
    if (!Registry::Get().StartOf(op->content_id[r], &start) ||
        !Registry::Get().Find(start + op->content_offset[r], &id, &offset))
      continue;
    op->content_param[kept] = op->content_param[r];
    op->content_id[kept] = id;
    op->content_offset[kept] = offset;
    ++kept;
  }
  op->content_ref_count = static_cast<std::uint8_t>(kept);
}

}  // namespace myriad::shim
