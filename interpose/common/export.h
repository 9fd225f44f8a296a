// Marks a shim's implementation of an exported function.
//
// The shims are compiled with -fvisibility=hidden, and the generated weak stubs in
// <lib>/generated/unsupported.cc are visibility("default"). When the linker merges a strong
// definition with the weak stub it keeps the MOST restrictive visibility, so an implementation
// compiled without this marker is hidden and silently disappears from the export table (the
// abi test then fails with the symbol "missing from the shim"). Write:
//
//   extern "C" MYRIAD_EXPORT cudaError_t cudaMalloc(void** ptr, size_t size) { ... }
//
// or wrap a block of definitions in
//   #pragma GCC visibility push(default)  ...  #pragma GCC visibility pop
//
// Which symbols a shim exports is decided by its version script (<lib>/generated/exports.map);
// marking a function that the real library does not export has no effect.
#pragma once

#define MYRIAD_EXPORT __attribute__((visibility("default")))
