// Shared look-up for the catalog tables: find by key, or say which keys exist.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "myriad/status.h"

namespace myriad::netmodel::catalog {

template <typename Table>
auto Find(const Table& table, std::string_view key, std::string_view what)
    -> Result<typename Table::value_type> {
  std::string known;
  for (const auto& entry : table) {
    if (entry.key == key) return entry;
    if (!known.empty()) known += ", ";
    known += entry.key;
  }
  return Status::NotFound("unknown " + std::string(what) + " '" + std::string(key) +
                          "' (known: " + known + ")");
}

template <typename Table>
std::vector<std::string> Keys(const Table& table) {
  std::vector<std::string> keys;
  for (const auto& entry : table) keys.push_back(entry.key);
  return keys;
}

}  // namespace myriad::netmodel::catalog
