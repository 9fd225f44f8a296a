// Device memory whose bytes are known to be real. Kernels are timed, not run, so device
// memory holds what copies put there; only what a copy from the host wrote is what the program
// meant to be there (a block mask built on the host and moved, an index table). Those ranges
// are told to Myriad once (wire::kDeviceContents) and named by each launch whose pointers
// point into them, so that a kernel's code reading them (a loop bound in memory) is evaluated
// from the real values. Anything else that writes the range (a memset, a copy from the device
// or too large to be sent, a free) forgets it; a kernel that writes it is told apart by
// Myriad, which reads the kernel's stores.
#pragma once

#include <cstddef>
#include <cstdint>

namespace myriad::shim {

// A copy put `bytes` at device address `dst`: from the host (its bytes real and at most
// wire::kMaxKnownContents: sent as new known contents), or not (forgotten).
void ContentsCopied(const void* dst, std::size_t bytes, bool from_host);
// Something else wrote or freed [at, at + bytes).
void ContentsForgotten(const void* at, std::size_t bytes);
// The known contents `p` points into: their id and p's offset in them.
bool ContentsAt(const void* p, std::uint32_t* id, std::uint32_t* offset);

}  // namespace myriad::shim
