#include "cli/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>

#include "myriad/emulator/units.h"

namespace myriad::cli {
namespace {

// "1.2 M": counts and rates at a glance.
std::string Count(double n) {
  if (n >= 1e9) return fmt::format("{:.1f} G", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.1f} M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.1f} K", n / 1e3);
  return fmt::format("{:.0f} ", n);
}

}  // namespace

std::string FormatProgress(const emulator::Progress& p) {
  std::string line =
      fmt::format("virtual time {} | {}ops simulated, {}ops/s | ranks {} live, {} finished",
                  emulator::FormatDuration(emulator::ToMicros(p.virtual_time) * 1e-6),
                  Count(static_cast<double>(p.ops)),
                  Count(p.wall_seconds > 0 ? static_cast<double>(p.ops) / p.wall_seconds : 0),
                  p.ranks - p.finished, p.finished);
  // The time left, from the share of the known op count done so far.
  if (p.expected_ops > 0 && p.ops > 0 && p.ops < p.expected_ops && !p.done)
    line += fmt::format(
        " | ETA {:.0f} s",
        p.wall_seconds * static_cast<double>(p.expected_ops - p.ops) / static_cast<double>(p.ops));
  return line;
}

std::function<void(const emulator::Progress&)> MakeProgressDisplay(std::ostream& err,
                                                                   ProgressMode mode) {
  if (mode == ProgressMode::kNever) return {};
  const bool terminal = &err == &std::cerr && ::isatty(STDERR_FILENO) == 1;
  if (mode == ProgressMode::kAuto && !terminal) return {};
  // On a terminal the line is rewritten in place and erased at the end, so the summary and
  // the program's own output read as without it.
  auto shown = std::make_shared<bool>(false);
  return [&err, terminal, shown](const emulator::Progress& p) {
    if (terminal) {
      if (p.done) {
        if (*shown) err << "\r\033[K" << std::flush;
        return;
      }
      err << "\r\033[Kmyriad: " << FormatProgress(p) << std::flush;
      *shown = true;
      return;
    }
    err << "myriad: progress: " << FormatProgress(p) << (p.done ? " (done)" : "") << "\n";
  };
}

}  // namespace myriad::cli
