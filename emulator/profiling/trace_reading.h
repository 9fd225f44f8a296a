// The readers of each trace format, behind profiling::ReadTrace.
#pragma once

#include <string>

#include "myriad/emulator/profiling.h"

namespace myriad::emulator::profiling {

// A PyTorch profiler (Kineto) Chrome trace, plain or gzip-compressed JSON.
Result<TraceRead> ReadKineto(const std::string& path);
// An Nsight Systems SQLite export (`nsys export --type sqlite`).
Result<TraceRead> ReadNsight(const std::string& path);
// What `myriad profile record`'s recorder wrote: its first line is kRecordingMagic, then per
// kernel name and launch shape "NAME\tGX,GY,GZ\tBX,BY,BZ\tSHARED\tLAUNCHES\tNS,NS,..."
// (the durations of the first launches).
inline constexpr std::string_view kRecordingMagic = "# myriad-kernel-record v1";
Result<TraceRead> ReadRecording(const std::string& path);

}  // namespace myriad::emulator::profiling
