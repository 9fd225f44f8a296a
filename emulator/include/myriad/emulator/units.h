// Quantities with units, as scenario files and command lines write them: "400Gbps", "50GB/s",
// "500ns", "80GiB", "989.4TFLOPS". Parsers return SI base units (bytes/s, seconds, bytes,
// FLOP/s) as double; formatters turn them back into short human-readable text.
//
// Grammar: NUMBER [spaces] UNIT, where NUMBER is digits with an optional fraction ("1.5"),
// without sign or exponent, and UNIT is case-sensitive (see docs/scenarios.md for the table).
#pragma once

#include <string>
#include <string_view>

#include "myriad/status.h"

namespace myriad::emulator {

// Bytes per second. Bits: bps Kbps Mbps Gbps Tbps (decimal). Bytes: B/s KB/s MB/s GB/s TB/s,
// or Bps KBps MBps GBps TBps (decimal); KiB/s MiB/s GiB/s TiB/s (binary).
Result<double> ParseBandwidth(std::string_view text);

// Seconds: ns, us (or µs), ms, s.
Result<double> ParseDuration(std::string_view text);

// Bytes: B, KB MB GB TB (decimal), KiB MiB GiB TiB (binary), or nccl-tests style: a bare
// number of bytes ("1024") or a number with K, M, G, T (binary multiples, as nccl-tests -b/-e
// read them: "8K" = 8192; lower case k, m, g also accepted there, as nccl-tests does).
Result<double> ParseBytes(std::string_view text);

// FLOP per second: FLOPS GFLOPS TFLOPS PFLOPS, or FLOP/s GFLOP/s TFLOP/s PFLOP/s (decimal).
Result<double> ParseFlops(std::string_view text);

// Watts: W, kW.
Result<double> ParsePower(std::string_view text);

// Output: the largest unit that keeps the number at least 1, at most two decimals, trailing
// zeros dropped: FormatBytes(80 * 2^30) = "80 GiB" (binary), FormatBandwidth(450e9) =
// "450 GB/s" (decimal bytes), FormatDuration(2e-6) = "2 us", FormatFlops(989.4e12) =
// "989.4 TFLOP/s" (FLOP rates stop at TFLOP/s, as datasheets do: "4500 TFLOP/s").
std::string FormatBytes(double bytes);
std::string FormatBandwidth(double bytes_per_second);
std::string FormatDuration(double seconds);
std::string FormatFlops(double flops);

// A plain number with at most `decimals` decimals and trailing zeros dropped ("0.824", "2").
std::string FormatNumber(double value, int decimals = 3);

}  // namespace myriad::emulator
