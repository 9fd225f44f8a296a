// Provider "kernel code": kernels whose work was counted from their own PTX when their op
// arrived (Op::counts, emulator/kernel_code/), timed on the GPU's roofline
// (docs/kernel-timing.md, "Kernels timed from their code").
#pragma once

#include <optional>
#include <string_view>

#include "myriad/emulator/kernel_timing.h"
#include "myriad/emulator/op.h"
#include "myriad/netmodel/hardware.h"

namespace myriad::emulator::timing {

// Per SM and clock, from the CUDA C Programming Guide's table of arithmetic instruction
// throughputs (compute capability 8.0 to 10.0): 16 results of the special-function units
// against 128 FP32 lanes (each FMA 2 FLOPs), and 4 warp schedulers issuing one warp
// instruction each, 128 thread-instructions. Expressed against GpuSpec::fp32_flops, which is
// 256 FLOPs per SM per clock.
inline constexpr double kSfuOpsPerFp32Flop = 16.0 / 256;
inline constexpr double kIssuePerFp32Flop = 128.0 / 256;
// FP64 on the CUDA cores is half the FP32 rate on A100 and H100 (9.7 of 19.5, 33.5 of 66.9
// TFLOP/s in their datasheets). (TF32 tensor cores: kTf32PerBf16, timing/library_model.h.)
inline constexpr double kFp64PerFp32 = 0.5;

struct CodeCountsEstimate {
  double memory = 0, fma = 0, fp64 = 0, tensor = 0, sfu = 0, issue = 0;  // seconds each
  double fill = 1;  // share of the SMs the grid occupies
  double seconds = 0;
};

// The slowest of the kernel's pipes (each at its full rate over the SMs its blocks occupy)
// plus the kernel floor: a bound from physics, not a fit.
CodeCountsEstimate EstimateCodeCounts(const Op& op, const netmodel::GpuSpec& gpu);

class CodeCountsProvider : public DurationProvider {
 public:
  explicit CodeCountsProvider(const netmodel::GpuSpec& gpu) : gpu_(gpu) {}
  std::string_view name() const override { return "kernel code"; }
  std::optional<SimTime> Duration(const Op& op, const NameTable& names) const override;

 private:
  netmodel::GpuSpec gpu_;
};

}  // namespace myriad::emulator::timing
