// The engine's log: spdlog lines stamped with virtual time, SimGrid style:
//   [   1234.567890 us] [debug] allreduce count=... on 'dp0' resolved: ...
#pragma once

#include <spdlog/logger.h>

#include "myriad/emulator/op.h"

namespace myriad::emulator::engine {

spdlog::logger& Log();
// The virtual time the next log lines carry (per thread: the engine runs on its own thread).
void SetLogTime(SimTime time);

}  // namespace myriad::emulator::engine
