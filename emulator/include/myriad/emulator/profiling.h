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
  std::int64_t gemm_call = -1;  // the GEMM call (TraceRead::gemm_calls) that launched it
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

}  // namespace myriad::emulator::profiling
