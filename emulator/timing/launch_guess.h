// Kernels no model knows (a program's own kernels, under `myriad run`): their work guessed from
// what the launch tells, timed as streaming memory, and reported as a guess
// (docs/kernel-timing.md, "Kernels no model knows").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "myriad/emulator/kernel_timing.h"
#include "myriad/emulator/op.h"
#include "myriad/netmodel/hardware.h"

namespace myriad::emulator::timing {

// Bytes assumed per thread when the kernel's parameters say nothing of its arrays: one 4-byte
// element read and one written. A guess.
inline constexpr double kGuessBytesPerThreadWithoutArrays = 8;

// Sets op->bytes (and op->bytes_guessed) from the kernel's `element_bytes` (ArrayElementBytes,
// timing/kernel_names.h) and the launch shape: one element of each array per thread launched
// (threads x element_bytes), or threads x kGuessBytesPerThreadWithoutArrays without pointer
// parameters; never more than its pointers reach (`pointer_bytes`, as the CUDA shim reports them,
// when every one is known). Integer arguments are not used: nothing says which are sizes (a seed is
// not), and per-rank values would make ranks differ. False when the launch has no threads.
bool GuessKernelWork(double element_bytes, std::span<const std::uint64_t> pointer_bytes, Op* op);

// Provider "launch guess": kernels whose bytes were guessed, at the GPU's streaming rate plus
// the kernel floor (StreamingKernelSeconds).
class LaunchGuessProvider : public DurationProvider {
 public:
  explicit LaunchGuessProvider(const netmodel::GpuSpec& gpu) : gpu_(gpu) {}
  std::string_view name() const override { return "launch guess"; }
  std::optional<SimTime> Duration(const Op& op, const NameTable& names) const override;

 private:
  netmodel::GpuSpec gpu_;
};

}  // namespace myriad::emulator::timing
