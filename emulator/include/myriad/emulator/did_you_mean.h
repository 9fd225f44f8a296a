// "Did you mean ...?" for misspelt keys, shared by scenario files and traces.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <vector>

namespace myriad::emulator {

inline std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The allowed key closest to a misspelt one: Levenshtein distance <= 2, else a prefix match
// either way (3 characters at least); "" when none is close.
inline std::string_view ClosestMatch(std::string_view key,
                                     const std::vector<std::string_view>& allowed) {
  std::string_view best;
  std::size_t best_distance = 3;
  for (std::string_view candidate : allowed) {
    const std::size_t distance = EditDistance(key, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  if (!best.empty() || key.size() < 3) return best;
  // A truncated key ("gpus_per") first; else the longest allowed key that the unknown one
  // extends ("nodes_count" -> "nodes").
  for (std::string_view candidate : allowed)
    if (candidate.starts_with(key)) return candidate;
  for (std::string_view candidate : allowed)
    if (key.starts_with(candidate) && candidate.size() >= 3 && candidate.size() > best.size())
      best = candidate;
  return best;
}

}  // namespace myriad::emulator
