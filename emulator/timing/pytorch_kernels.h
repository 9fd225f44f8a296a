// PyTorch's own CUDA kernels (elementwise, reductions, norms, softmax, fused optimizers, flash
// attention): recognised by their names (timing/kernel_names.h), their work derived from the launch
// shape and integer parameters, timed as memory-bound work or by the attention model. Every rule
// and constant is listed, with its source, in docs/kernel-timing.md ("PyTorch's kernels").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "myriad/emulator/kernel_timing.h"
#include "myriad/emulator/op.h"
#include "myriad/netmodel/hardware.h"
#include "timing/kernel_names.h"

namespace myriad::emulator::timing {

// Fills op->bytes (memory-bound families) or op->attention (kAttention) from the launch shape
// (op->grid, op->block) and the launch's integer parameters; returns false when the rule
// needs a parameter the launch did not report (the op is left alone).
bool DescribeKernelWork(const KernelClass& kernel, std::span<const std::int64_t> int_args, Op* op);

// Fraction of HBM bandwidth a family reaches (docs/kernel-timing.md cites each).
double FamilyEfficiency(KernelFamily family);

// Provider "pytorch kernels": kernels of a KernelFamily whose work is known (op.bytes, or
// op.attention for the attention kernels), as that work over the family's share of HBM
// bandwidth plus the kernel floor, or by the attention model.
class PytorchKernelProvider : public DurationProvider {
 public:
  explicit PytorchKernelProvider(const netmodel::GpuSpec& gpu) : gpu_(gpu) {}
  std::string_view name() const override { return "pytorch kernels"; }
  std::optional<SimTime> Duration(const Op& op, const NameTable& names) const override;

 private:
  netmodel::GpuSpec gpu_;
  mutable KernelClassCache cache_;
};

}  // namespace myriad::emulator::timing
