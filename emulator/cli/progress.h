// A one-line progress display on stderr for long runs: virtual time reached, simulated ops per
// second, ranks live and finished, and the time left when the workload knows its op count.
#pragma once

#include <functional>
#include <iosfwd>

#include "myriad/emulator/engine.h"

namespace myriad::cli {

// kAuto shows it only when stderr is a terminal (rewriting one line); kAlways also when it is
// not (a line per update, for logs); kNever is --quiet.
enum class ProgressMode { kAuto, kAlways, kNever };

// The engine's on_progress for `err` (empty when nothing is to be shown). kAuto needs `err` to
// be std::cerr on a terminal.
std::function<void(const emulator::Progress&)> MakeProgressDisplay(std::ostream& err,
                                                                   ProgressMode mode);

// One update as the display writes it (without the terminal's line rewriting).
std::string FormatProgress(const emulator::Progress& progress);

}  // namespace myriad::cli
