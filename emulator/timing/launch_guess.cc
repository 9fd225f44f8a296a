// Kernels no model knows: work from the launch (docs/kernel-timing.md, "Kernels no model
// knows").
#include "timing/launch_guess.h"

#include <algorithm>
#include <cmath>

#include "timing/library_model.h"

namespace myriad::emulator::timing {

bool GuessKernelWork(double element_bytes, std::span<const std::uint64_t> pointer_bytes, Op* op) {
  const double threads = static_cast<double>(op->grid.x) * op->grid.y * op->grid.z * op->block.x *
                         op->block.y * op->block.z;
  if (!(threads > 0)) return false;
  double bytes =
      element_bytes > 0 ? threads * element_bytes : threads * kGuessBytesPerThreadWithoutArrays;
  double reach = 0;
  bool reach_known = !pointer_bytes.empty();
  for (std::uint64_t b : pointer_bytes) {
    reach += static_cast<double>(b);
    reach_known = reach_known && b > 0;
  }
  if (reach_known) bytes = std::min(bytes, reach);
  if (!(bytes > 0) || !std::isfinite(bytes) || bytes > 1e15) return false;
  op->bytes = static_cast<std::uint64_t>(bytes);
  op->bytes_guessed = true;
  return true;
}

std::optional<SimTime> LaunchGuessProvider::Duration(const Op& op, const NameTable&) const {
  if (op.kind != OpKind::kKernel || !op.bytes_guessed || op.bytes == 0) return std::nullopt;
  return SecondsToSim(StreamingKernelSeconds(op.bytes, gpu_));
}

}  // namespace myriad::emulator::timing
