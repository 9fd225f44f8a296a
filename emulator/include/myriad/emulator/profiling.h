// Profiles from GPU traces: the kernels a real GPU ran, read from a PyTorch profiler (Kineto)
// Chrome trace or an Nsight Systems SQLite export, turned into the profile database the
// kernel timer reads (docs/kernel-timing.md, "Importing a profile").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "myriad/emulator/op.h"
#include "myriad/status.h"

namespace myriad::emulator::profiling {

// One kernel execution on the GPU.
struct KernelRecord {
  std::string name;  // demangled, as the trace names it
  Dim3 grid;
  Dim3 block;
  std::uint32_t shared_mem = 0;  // bytes (Kineto: static + dynamic; Nsight: dynamic)
  double duration_us = 0;
  double start_us = 0;          // on the trace's clock (Kineto only; 0 elsewhere)
  std::int64_t stream = -1;     // the CUDA stream it ran on (Kineto only; -1 elsewhere)
  std::int64_t gemm_call = -1;  // the GEMM call (TraceRead::gemm_calls) that launched it
  // The innermost ATen op around its launch on the launching thread, with the dimensions of
  // its inputs as recorded (`record_shapes=True`; a non-tensor input has none): what the
  // kernel's work is derived from when a trace is replayed through the models.
  std::string op;
  std::vector<std::vector<std::int64_t>> input_dims;
};

// What a trace holds that a profile needs.
struct TraceRead {
  std::string format;       // "kineto", "nsight" or "cupti" (`myriad profile record`)
  std::string device_name;  // the GPU as the trace names it ("" when it does not)
  std::vector<KernelRecord> kernels;
  // The matrix products the program called (aten::mm, addmm, bmm, baddbmm, _scaled_mm) that
  // launched kernels, with their shapes from the op's recorded input dimensions
  // (`record_shapes=True`).
  std::vector<GemmShape> gemm_calls;
};

// Reads a trace, telling the format from its content: an SQLite database (Nsight Systems'
// export), a recording of `myriad profile record`, gzip-compressed JSON or plain JSON (the
// PyTorch profiler's). Errors are one line naming the file.
Result<TraceRead> ReadTrace(const std::string& path);

struct ImportResult {
  std::string database;  // the profile database's text (format v2)
  std::size_t kernels = 0;
  std::size_t kernel_rows = 0;  // distinct (kernel, launch shape)
  std::size_t gemm_calls = 0;
  std::size_t gemm_rows = 0;  // distinct GEMM shapes
  double kernel_time_us = 0;  // the kernels' total duration
};

// Builds a profile database for catalog GPU `gpu_key` from the traces (each kernel's median,
// count and spread per name and launch shape; each GEMM call's total kernel time per shape).
Result<ImportResult> BuildProfile(const std::vector<TraceRead>& traces, std::string_view gpu_key,
                                  std::string_view source);

// The catalog key whose GPU name equals `device_name` ("NVIDIA H100 80GB HBM3": h100-sxm);
// an error when none does.
Result<std::string> GpuKeyForDevice(std::string_view device_name);

// Replaying a real trace's kernels through Myriad's models (no profile): each kernel's work
// comes from what the trace says of it (name, launch shape, and its ATen op's input shapes
// where they were recorded) the way a launch's would under `myriad run`, and is timed by the
// chain `myriad run` uses, without the trace's own durations. docs/validation.md, "Kernel
// models against real traces".
struct KernelCheck {
  std::string name;         // the kernel (a GEMM call's: its first kernel)
  std::string family;       // its report family (timing/kernel_names.h)
  std::string model;        // the provider that timed it
  std::size_t kernels = 1;  // a GEMM call may launch several (a split-K reduction)
  double measured_us = 0, predicted_us = 0;
  Dim3 grid, block;         // its launch shape, as the trace recorded it
  std::uint64_t bytes = 0;  // the bytes the model counted (0: a model that counts none)
  // Another kernel ran on another stream while it did (an NCCL kernel beside a GEMM): its
  // measured duration includes sharing the GPU, which a kernel model does not time.
  bool overlapped = false;
  // NCCL kernels beside it: the most thread blocks (channels, one SM each) of one, and the
  // share of its measured time they overlapped. `tensor`: a tensor-core kernel, which the
  // shared model slows by the SMs they hold (docs/engine.md "Compute beside communication").
  int nccl_blocks = 0;
  double nccl_overlap = 0;
  bool tensor = false;
};

// The checks of one family timed by one model.
struct FamilyCheck {
  std::string family, model;
  std::size_t checks = 0;
  double measured_us = 0, predicted_us = 0;
  // Over the checks, predicted / measured - 1: the median, the median of its magnitude, and
  // the 90th percentile of the magnitude.
  double median_error = 0, median_abs_error = 0, p90_abs_error = 0;
  // The same over the checks measured at kLongKernelUs or more, where a kernel's fixed cost
  // (the floor) no longer dominates: bandwidth and FLOP rates, not launch costs.
  std::size_t long_checks = 0;
  double long_median_error = 0;
  // The same over the checks no kernel of another stream overlapped.
  std::size_t isolated_checks = 0;
  double isolated_median_error = 0;
  // Over the tensor-core checks an NCCL kernel overlapped: the median error of the model
  // alone, and with the shared model's stretch for the SMs the NCCL kernel held, over the
  // share of the kernel's time it overlapped.
  std::size_t nccl_checks = 0;
  double nccl_median_error = 0, nccl_shared_median_error = 0;
};
inline constexpr double kLongKernelUs = 10;

// One kernel and launch shape that ran both beside an NCCL kernel (over 90% of its time) and
// with none: what the GPU measured, and what the shared model says, of the slowdown.
struct BesideNcclPair {
  std::string name;
  Dim3 grid, block;
  std::size_t beside = 0, alone = 0;  // launches of each kind
  int nccl_blocks = 0;                // the median NCCL kernel's blocks beside it
  double measured_ratio = 0;          // median duration beside / median alone
  double model_ratio = 0;             // the shared model's stretch for those blocks
};

struct KernelValidation {
  std::string gpu_key;
  // Tensor-core kernels measured both beside NCCL and alone, in trace order of first launch.
  std::vector<BesideNcclPair> beside_nccl;
  std::vector<KernelCheck> checks;    // in trace order
  std::vector<FamilyCheck> families;  // by family (most measured time first), then model
  // NCCL's kernels, not checked: a trace records no collective's size, and their durations
  // include waiting for the other ranks.
  std::size_t communication_kernels = 0;
  double communication_us = 0;
};

// Replays the kernels of `traces` on catalog GPU `gpu_key`.
Result<KernelValidation> ValidateKernels(const std::vector<TraceRead>& traces,
                                         std::string_view gpu_key);

// The median of `values` (the mean of the middle two for an even count); 0 for none.
double Median(std::vector<double> values);

}  // namespace myriad::emulator::profiling
