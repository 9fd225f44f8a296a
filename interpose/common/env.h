// Settings the shims read from the environment, once, at first use.
#pragma once

#include <cstddef>
#include <cstdlib>

namespace myriad::shim {

// A byte count from `name` (a plain decimal number), or `fallback` when it is unset or not one.
inline std::size_t EnvBytes(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  return *end == '\0' ? static_cast<std::size_t>(n) : fallback;
}

}  // namespace myriad::shim
