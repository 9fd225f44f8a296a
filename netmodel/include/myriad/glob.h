// '*'-wildcard matching of names (link names in [network], metric names in `myriad gate`).
#pragma once

#include <string_view>

namespace myriad {

// Whether `text` matches `pattern`, where '*' matches any run of characters (none included)
// and every other character itself.
inline bool GlobMatch(std::string_view pattern, std::string_view text) {
  // Iterative, backtracking to the last star: linear in practice, no recursion.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace myriad
