#include "cli/run_flags.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>

#include "cli/commands.h"
#include "myriad/input_file.h"

namespace myriad::cli {
namespace {

std::optional<double> ParseNumber(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(v >= 0)) return std::nullopt;
  return v;
}

}  // namespace

bool WriteFile(const std::string& path, const std::string& text, std::ostream& err) {
  // Opened in place, never replaced: a FIFO or /dev/stdout is written into, a link's file gets
  // the text and the link stays.
  errno = 0;
  std::ofstream file(path, std::ios::binary);
  file << text;
  file.close();
  if (!file) {
    err << "myriad: error: cannot write " << path
        << (errno != 0 ? std::string(": ") + std::strerror(errno) : std::string()) << "\n";
    return false;
  }
  return true;
}

Status ReadText(const std::string& path, std::string_view what, std::string* text) {
  // Reports are at most tens of MB (16,384 ranks); 1 GiB is none.
  if (Status st = CheckInputFile(path, what, std::uint64_t{1} << 30); !st.ok()) return st;
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  *text = s.str();
  return Status::Ok();
}

bool ParseRunFlag(const std::vector<std::string>& args, std::size_t& i, RunFlags& flags,
                  std::string& error) {
  const std::string& a = args[i];
  auto value = [&]() -> std::optional<std::string> {
    if (i + 1 >= args.size()) return std::nullopt;
    return args[++i];
  };
  auto number = [&](const char* what, double* into) {
    auto v = value();
    auto n = v ? ParseNumber(*v) : std::nullopt;
    if (!n) {
      error = a + " needs " + what;
      return false;
    }
    *into = *n;
    return true;
  };
  auto file = [&](std::string* into) {
    auto v = value();
    if (!v)
      error = a + " needs a file";
    else
      *into = *v;
    return true;
  };
  // A flag that takes one of two words: true for the first; nothing (and the error) otherwise.
  auto either = [&](const char* first, const char* second) -> std::optional<bool> {
    auto v = value();
    if (v && (*v == first || *v == second)) return *v == first;
    error = a + " must be " + first + " or " + second + (v ? ", got '" + *v + "'" : std::string());
    return std::nullopt;
  };
  double x = 0;
  emulator::EngineOptions& o = flags.engine;
  if (a == "--report") return file(&flags.report_path);
  if (a == "--timeline") return file(&flags.timeline_path);
  if (a == "--html") return file(&flags.html_path);
  if (a == "--json") {
    flags.json = true;
    return true;
  }
  if (a == "--progress" || a == "--quiet") {
    flags.progress = a == "--quiet" ? ProgressMode::kNever : ProgressMode::kAlways;
    return true;
  }
  if (a == "--profile" || a == "--kernel-profile") {
    std::string path;
    file(&path);
    if (error.empty()) o.timing.profile_paths.push_back(path);
    return true;
  }
  if (a == "--no-launch-guess") {
    o.timing.launch_guess = false;
    return true;
  }
  if (a == "--timeline-ranks") {
    if (number("a whole number", &x) && x != static_cast<int>(x))
      error = "--timeline-ranks needs a whole number";
    o.timeline_max_ranks = static_cast<int>(x);
    return true;
  }
  if (a == "--fallback-kernel-us") {
    if (number("a number >= 0", &x)) o.timing.fallback_duration = emulator::FromMicros(x);
    return true;
  }
  if (a == "--launch-latency-us") {
    if (number("a number >= 0", &x)) o.launch_latency = emulator::FromMicros(x);
    return true;
  }
  if (a == "--api-cost-us") {
    if (number("a number >= 0", &x)) o.api_call_cost = emulator::FromMicros(x);
    return true;
  }
  if (a == "--overlap-slowdown") {
    if (number("a number >= 0", &x)) {
      o.overlap = emulator::OverlapModel::kFlat;
      o.overlap_slowdown = x;
      flags.overlap_given = true;
    }
    return true;
  }
  if (a == "--overlap") {
    if (const std::optional<bool> shared = either("shared", "off")) {
      o.overlap = *shared ? emulator::OverlapModel::kShared : emulator::OverlapModel::kOff;
      flags.overlap_given = true;
    }
    return true;
  }
  if (a == "--iteration-marker") {
    auto v = value();
    if (!v || v->empty())
      error = "--iteration-marker needs a name";
    else
      o.iteration_label = *v;
    return true;
  }
  if (a == "--fidelity") {
    auto v = value();
    if (!v)
      error = "--fidelity needs a value";
    else if (auto parsed = netmodel::ParseFidelity(*v); !parsed.ok())
      error = "--fidelity must be analytical or flow, got '" + *v + "'";
    else {
      o.fidelity = *parsed;
      flags.fidelity_given = true;
    }
    return true;
  }
  if (a == "--clocks") {
    if (const std::optional<bool> sustained = either("sustained", "boost")) {
      o.timing.sustained_clocks = *sustained;
      flags.clocks_given = true;
    }
    return true;
  }
  if (a == "--fp8-accumulation") {
    if (const std::optional<bool> as_called = either("as-called", "fast")) {
      o.timing.fp8_promotion = *as_called;
      flags.fp8_given = true;
    }
    return true;
  }
  if (a == "--max-queued-ops") {
    if (number("a count of ops (0: unbounded)", &x))
      o.max_queued_ops = static_cast<std::uint64_t>(x);
    return true;
  }
  if (a == "--baseline") return file(&flags.baseline_path);
  if (a == "--max-regression") {
    auto v = value();
    auto f = v ? emulator::ParseFraction(*v) : Result<double>(Status::InvalidArgument(""));
    if (!f.ok())
      error = "--max-regression needs a threshold such as 2% or 0.02";
    else
      flags.gate.max_regression = *f;
    return true;
  }
  if (a == "--log-level") {
    static const std::vector<std::string> kLevels = {"trace", "debug", "info",
                                                     "warn",  "error", "off"};
    auto v = value();
    if (!v || std::find(kLevels.begin(), kLevels.end(), *v) == kLevels.end())
      error = "--log-level needs one of trace, debug, info, warn, error, off";
    else
      o.log_level = *v;
    return true;
  }
  return false;
}

int FinishRun(const emulator::RunResult& result, const emulator::RunContext& context,
              const RunFlags& flags, std::ostream& out, std::ostream& err) {
  // The JSON report is built once, for stdout (--json) and the file (--report) alike.
  const std::string report = flags.json || !flags.report_path.empty()
                                 ? emulator::ReportJson(result, context)
                                 : std::string();
  out << (flags.json ? report : emulator::FormatSummary(result, context));
  if (!flags.report_path.empty() && !WriteFile(flags.report_path, report, err)) return kExitFailure;
  if (!flags.timeline_path.empty() &&
      !WriteFile(flags.timeline_path, emulator::TimelineJson(result, context), err))
    return kExitFailure;
  if (!flags.html_path.empty() &&
      !WriteFile(flags.html_path, emulator::ReportHtml(result, context), err))
    return kExitFailure;
  return kExitOk;
}

}  // namespace myriad::cli
