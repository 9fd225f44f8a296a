// Kernels timed from their code's counts: a roofline over the GPU's pipes.
#include "timing/code_counts.h"

#include <algorithm>

#include "timing/library_model.h"

namespace myriad::emulator::timing {

CodeCountsEstimate EstimateCodeCounts(const Op& op, const netmodel::GpuSpec& gpu) {
  CodeCountsEstimate e;
  const KernelCounts& k = op.counts;
  const double blocks = static_cast<double>(op.grid.x) * op.grid.y * op.grid.z;
  e.fill = gpu.sm_count > 0 ? std::min(1.0, blocks / gpu.sm_count) : 1.0;
  const double fill = std::max(e.fill, 1e-9);
  const double fp32 = gpu.fp32_flops * fill;
  e.memory = static_cast<double>(op.bytes) / (gpu.hbm_bandwidth * gpu.hbm_efficiency * fill);
  e.fma = k.fma_flops / fp32;
  e.fp64 = k.fp64_flops / (fp32 * kFp64PerFp32);
  // Tensor-core instructions on FP32 operands are TF32's.
  const double tensor_peak = GemmPeakFlops(
      k.tensor_dtype == DataType::kFloat32 ? DataType::kTfloat32 : k.tensor_dtype, gpu);
  e.tensor = k.tensor_flops > 0 ? k.tensor_flops / (tensor_peak * fill) : 0;
  e.sfu = k.sfu_ops / (fp32 * kSfuOpsPerFp32Flop);
  e.issue = k.instructions / (fp32 * kIssuePerFp32Flop);
  e.seconds = std::max({e.memory, e.fma, e.fp64, e.tensor, e.sfu, e.issue}) + gpu.kernel_floor;
  return e;
}

std::optional<SimTime> CodeCountsProvider::Duration(const Op& op, const NameTable&) const {
  if (op.kind != OpKind::kKernel || !op.counts.counted) return std::nullopt;
  return SecondsToSim(EstimateCodeCounts(op, gpu_).seconds);
}

}  // namespace myriad::emulator::timing
