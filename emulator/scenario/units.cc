#include "myriad/emulator/units.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <optional>
#include <span>

namespace myriad::emulator {
namespace {

struct Unit {
  std::string_view symbol;
  double scale;  // SI base units per one of this unit
};

constexpr double kKi = 1024.0;
constexpr double kMi = kKi * 1024.0;
constexpr double kGi = kMi * 1024.0;
constexpr double kTi = kGi * 1024.0;
constexpr double kPi = kTi * 1024.0;

// Accepted spellings. Kilo is written K (as in the rest of Myriad's output) or k (SI).
constexpr std::array kBandwidthUnits = {
    Unit{"bps", 1.0 / 8},  Unit{"Kbps", 1e3 / 8},  Unit{"kbps", 1e3 / 8}, Unit{"Mbps", 1e6 / 8},
    Unit{"Gbps", 1e9 / 8}, Unit{"Tbps", 1e12 / 8}, Unit{"B/s", 1},        Unit{"KB/s", 1e3},
    Unit{"kB/s", 1e3},     Unit{"MB/s", 1e6},      Unit{"GB/s", 1e9},     Unit{"TB/s", 1e12},
    Unit{"Bps", 1},        Unit{"KBps", 1e3},      Unit{"kBps", 1e3},     Unit{"MBps", 1e6},
    Unit{"GBps", 1e9},     Unit{"TBps", 1e12},     Unit{"KiB/s", kKi},    Unit{"MiB/s", kMi},
    Unit{"GiB/s", kGi},    Unit{"TiB/s", kTi},
};

constexpr std::array kDurationUnits = {
    Unit{"ns", 1e-9},      Unit{"us", 1e-6}, Unit{"\u00b5s", 1e-6},  // micro sign
    Unit{"\u03bcs", 1e-6},  // Greek small mu, which some keyboards produce instead
    Unit{"ms", 1e-3},      Unit{"s", 1},
};

constexpr std::array kByteUnits = {
    Unit{"B", 1},
    Unit{"KB", 1e3},
    Unit{"kB", 1e3},
    Unit{"MB", 1e6},
    Unit{"GB", 1e9},
    Unit{"TB", 1e12},
    Unit{"KiB", kKi},
    Unit{"MiB", kMi},
    Unit{"GiB", kGi},
    Unit{"TiB", kTi},
    // nccl-tests size suffixes (src/common.cu parsesize): binary, either case.
    Unit{"K", kKi},
    Unit{"k", kKi},
    Unit{"M", kMi},
    Unit{"m", kMi},
    Unit{"G", kGi},
    Unit{"g", kGi},
    Unit{"T", kTi},
};

constexpr std::array kFlopsUnits = {
    Unit{"FLOPS", 1},     Unit{"KFLOPS", 1e3},  Unit{"MFLOPS", 1e6},   Unit{"GFLOPS", 1e9},
    Unit{"TFLOPS", 1e12}, Unit{"PFLOPS", 1e15}, Unit{"FLOP/s", 1},     Unit{"KFLOP/s", 1e3},
    Unit{"MFLOP/s", 1e6}, Unit{"GFLOP/s", 1e9}, Unit{"TFLOP/s", 1e12}, Unit{"PFLOP/s", 1e15},
};
constexpr std::array kPowerUnits = {Unit{"W", 1}, Unit{"kW", 1e3}};

struct Quantity {
  double number = 0;
  std::string_view unit;
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// NUMBER [spaces] UNIT; nullopt when the number part is malformed or missing.
std::optional<Quantity> Split(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && IsDigit(text[i])) ++i;
  if (i == 0) return std::nullopt;
  if (i < text.size() && text[i] == '.') {
    const std::size_t fraction = ++i;
    while (i < text.size() && IsDigit(text[i])) ++i;
    if (i == fraction) return std::nullopt;  // "1." or "1..2"
  }
  Quantity q;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + i, q.number);
  if (ec != std::errc() || end != text.data() + i || !std::isfinite(q.number)) return std::nullopt;
  const std::size_t number_end = i;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  q.unit = text.substr(i);
  if (q.unit.empty() && i != number_end) return std::nullopt;  // trailing spaces, no unit
  return q;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

Result<double> Parse(std::string_view text, std::span<const Unit> units, bool unit_optional,
                     std::string_view what, std::string_view examples) {
  auto bad = [&](std::string_view hint) {
    return Status::InvalidArgument(
        fmt::format("bad {} '{}': expected a number and {} such as {}{}", what, text,
                    unit_optional ? "an optional unit" : "a unit", examples, hint));
  };
  const std::optional<Quantity> q = Split(text);
  if (!q) return bad("");
  if (q->unit.empty()) {
    if (unit_optional) return q->number;
    return bad("");
  }
  for (const Unit& unit : units) {
    if (unit.symbol == q->unit) return q->number * unit.scale;
  }
  // Units are case-sensitive (Gbps and GBps differ by 8x), so a near miss gets a pointer
  // rather than a guess.
  for (const Unit& unit : units) {
    if (EqualsIgnoreCase(unit.symbol, q->unit)) {
      return bad(fmt::format(" (units are case-sensitive: did you mean '{}'?)", unit.symbol));
    }
  }
  return bad("");
}

std::string FormatScaled(double value, std::span<const Unit> units, double step) {
  if (value == 0 || !std::isfinite(value)) {
    return fmt::format("{} {}", FormatNumber(value, 2), units[0].symbol);
  }
  std::size_t pick = 0;
  for (std::size_t i = 0; i < units.size(); ++i) {
    if (std::fabs(value) >= units[i].scale) pick = i;
  }
  double scaled = value / units[pick].scale;
  // 999.999 GB/s would print as "1000 GB/s"; say "1 TB/s" instead.
  if (pick + 1 < units.size() && std::fabs(std::round(scaled * 100) / 100) >= step) {
    ++pick;
    scaled = value / units[pick].scale;
  }
  return fmt::format("{} {}", FormatNumber(scaled, 2), units[pick].symbol);
}

constexpr std::array kByteOutput = {Unit{"B", 1},     Unit{"KiB", kKi}, Unit{"MiB", kMi},
                                    Unit{"GiB", kGi}, Unit{"TiB", kTi}, Unit{"PiB", kPi}};
constexpr std::array kBandwidthOutput = {Unit{"B/s", 1}, Unit{"KB/s", 1e3}, Unit{"MB/s", 1e6},
                                         Unit{"GB/s", 1e9}, Unit{"TB/s", 1e12}};
constexpr std::array kDurationOutput = {Unit{"ns", 1e-9}, Unit{"us", 1e-6}, Unit{"ms", 1e-3},
                                        Unit{"s", 1}};
// No PFLOP/s: datasheets quote GPU peaks in TFLOP/s, and "1978.9 TFLOP/s" compares at a
// glance with them.
constexpr std::array kFlopsOutput = {Unit{"FLOP/s", 1}, Unit{"KFLOP/s", 1e3}, Unit{"MFLOP/s", 1e6},
                                     Unit{"GFLOP/s", 1e9}, Unit{"TFLOP/s", 1e12}};

}  // namespace

Result<double> ParseBandwidth(std::string_view text) {
  return Parse(text, kBandwidthUnits, false, "bandwidth", "400Gbps, 50GB/s");
}

Result<double> ParseDuration(std::string_view text) {
  return Parse(text, kDurationUnits, false, "duration", "500ns, 2us, 1.5ms");
}

Result<double> ParseBytes(std::string_view text) {
  return Parse(text, kByteUnits, true, "size", "80GiB, 512KiB, 8M");
}

Result<double> ParsePower(std::string_view text) {
  return Parse(text, kPowerUnits, false, "power", "500W, 0.7kW");
}

Result<double> ParseFlops(std::string_view text) {
  return Parse(text, kFlopsUnits, false, "FLOP rate", "989.4TFLOPS, 312TFLOP/s");
}

std::string FormatBytes(double bytes) { return FormatScaled(bytes, kByteOutput, kKi); }

std::string FormatBandwidth(double bytes_per_second) {
  return FormatScaled(bytes_per_second, kBandwidthOutput, 1e3);
}

std::string FormatDuration(double seconds) {
  if (seconds == 0) return "0 s";  // reads better than "0 ns"
  return FormatScaled(seconds, kDurationOutput, 1e3);
}

std::string FormatFlops(double flops) { return FormatScaled(flops, kFlopsOutput, 1e3); }

std::string FormatNumber(double value, int decimals) {
  std::string text = fmt::format("{:.{}f}", value, decimals);
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  if (text == "-0") text = "0";
  return text;
}

}  // namespace myriad::emulator
