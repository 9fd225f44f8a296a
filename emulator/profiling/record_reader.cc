// The recorder's output (interpose/recorder/recorder.cc, `myriad profile record`): per kernel
// name and launch shape, the launches and the durations of the first few.
#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <fstream>
#include <string>

#include "profiling/trace_reading.h"

namespace myriad::emulator::profiling {
namespace {

bool ParseDim(std::string_view text, Dim3* out) {
  std::uint32_t v[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    const std::size_t comma = i < 2 ? text.find(',') : text.size();
    if (comma == std::string_view::npos) return false;
    const std::string_view part = text.substr(0, comma);
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v[i]);
    if (ec != std::errc() || end != part.data() + part.size() || v[i] == 0) return false;
    text.remove_prefix(std::min(text.size(), comma + 1));
  }
  *out = Dim3{v[0], v[1], v[2]};
  return true;
}

}  // namespace

Result<TraceRead> ReadRecording(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  TraceRead read;
  read.format = "cupti";
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1) {
      if (line != kRecordingMagic)
        return Status::InvalidArgument(fmt::format("{}:1: not a Myriad kernel recording", path));
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::string_view fields[6];
    std::string_view rest = line;
    int n = 0;
    for (; n < 6 && !rest.empty(); ++n) {
      const std::size_t tab = n < 5 ? rest.find('\t') : rest.size();
      if (tab == std::string_view::npos) break;
      fields[n] = rest.substr(0, tab);
      rest.remove_prefix(std::min(rest.size(), tab + 1));
    }
    KernelRecord k;
    std::uint64_t launches = 0;
    const auto bad = [&](std::string_view what) {
      return Status::InvalidArgument(fmt::format("{}:{}: bad {}", path, line_no, what));
    };
    if (n < 5 || fields[0].empty()) return bad("line (name, grid, block, shared memory, launches)");
    k.name = std::string(fields[0]);
    if (!ParseDim(fields[1], &k.grid)) return bad("grid");
    if (!ParseDim(fields[2], &k.block)) return bad("block");
    if (std::from_chars(fields[3].data(), fields[3].data() + fields[3].size(), k.shared_mem).ec !=
        std::errc())
      return bad("shared memory");
    if (std::from_chars(fields[4].data(), fields[4].data() + fields[4].size(), launches).ec !=
        std::errc())
      return bad("launch count");
    std::string_view samples = n == 6 ? fields[5] : std::string_view();
    while (!samples.empty()) {
      const std::size_t comma = std::min(samples.find(','), samples.size());
      std::uint64_t ns = 0;
      if (std::from_chars(samples.data(), samples.data() + comma, ns).ec != std::errc())
        return bad("durations");
      KernelRecord sample = k;
      sample.duration_us = static_cast<double>(ns) / 1000.0;
      read.kernels.push_back(std::move(sample));
      samples.remove_prefix(std::min(samples.size(), comma + 1));
    }
  }
  if (line_no == 0) return Status::InvalidArgument(fmt::format("{}: empty recording", path));
  return read;
}

}  // namespace myriad::emulator::profiling
