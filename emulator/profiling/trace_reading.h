// The readers of each trace format, behind profiling::ReadTrace.
#pragma once

#include <string>

#include "myriad/emulator/profiling.h"

namespace myriad::emulator::profiling {

// A PyTorch profiler (Kineto) Chrome trace, plain or gzip-compressed JSON.
Result<TraceRead> ReadKineto(const std::string& path);
// An Nsight Systems SQLite export (`nsys export --type sqlite`).
Result<TraceRead> ReadNsight(const std::string& path);

}  // namespace myriad::emulator::profiling
