// The cudart shim's services, as the preload library's wrappers reach them
// (common/client_api.h): looked up once, lazily, so nothing runs at load time.
#pragma once

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "common/client_api.h"

namespace myriad::preload {

// The table when this process runs under `myriad run` with Myriad's cudart, else nullptr.
inline const shim::ClientTable* Table() {
  using GetExportTable = cudaError_t (*)(const void**, const cudaUUID_t*);
  static std::atomic<int> state{0};  // 0 unknown, 1 found, 2 absent
  static const shim::ClientTable* table = nullptr;
  const int s = state.load(std::memory_order_acquire);
  if (s == 1) return table;
  if (s == 2) return nullptr;
  const char* socket = std::getenv("MYRIAD_SOCKET");
  auto get = reinterpret_cast<GetExportTable>(::dlsym(RTLD_DEFAULT, "cudaGetExportTable"));
  const void* t = nullptr;
  if (socket && *socket && get && get(&t, &shim::kClientTableId) == cudaSuccess) {
    table = static_cast<const shim::ClientTable*>(t);
    state.store(1, std::memory_order_release);
    return table;
  }
  state.store(2, std::memory_order_release);
  return nullptr;
}

// The table if it has the host-thread calls (version 3), else nullptr.
inline const shim::ClientTable* ThreadTable() {
  const shim::ClientTable* t = Table();
  return t != nullptr && t->version >= 3 ? t : nullptr;
}

// libc's definition of `name`, past this library's.
template <typename F>
F Next(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

}  // namespace myriad::preload
