// Text made safe inside HTML and SVG (the HTML report, a sweep's results page).
#pragma once

#include <string>
#include <string_view>

namespace myriad {

// `&`, `<`, `>` and `"` as entities: safe in element text and in double-quoted attributes.
inline std::string EscapeHtml(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace myriad
