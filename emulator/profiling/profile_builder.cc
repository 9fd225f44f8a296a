// Traces to a profile database: kernels grouped by name and launch shape, GEMM calls by shape
// (docs/kernel-timing.md, "Importing a profile").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <tuple>

#include "myriad/netmodel/hardware.h"
#include "profiling/trace_reading.h"
#include "timing/profile_database.h"

namespace myriad::emulator::profiling {
namespace {

// SQLite's file header ("SQLite format 3" and a NUL).
constexpr char kSqliteMagic[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f',
                                   'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};

timing::ProfileStats StatsOf(std::vector<double> us) {
  timing::ProfileStats s;
  std::sort(us.begin(), us.end());
  s.samples = us.size();
  s.min_us = us.front();
  s.max_us = us.back();
  const std::size_t n = us.size();
  s.median_us = n % 2 == 1 ? us[n / 2] : (us[n / 2 - 1] + us[n / 2]) / 2;
  double sum = 0;
  for (double v : us) sum += v;
  s.mean_us = sum / static_cast<double>(n);
  double squares = 0;
  for (double v : us) squares += (v - s.mean_us) * (v - s.mean_us);
  s.stddev_us = std::sqrt(squares / static_cast<double>(n));
  // The database keeps three decimals: round so that its order checks hold as written.
  auto round3 = [](double v) { return std::round(v * 1000) / 1000; };
  s.min_us = round3(s.min_us);
  s.max_us = round3(s.max_us);
  s.median_us = std::clamp(round3(s.median_us), s.min_us, s.max_us);
  s.mean_us = std::clamp(round3(s.mean_us), s.min_us, s.max_us);
  s.stddev_us = round3(s.stddev_us);
  return s;
}

}  // namespace

Result<TraceRead> ReadTrace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  char head[16] = {};
  in.read(head, sizeof head);
  if (in.gcount() == sizeof head && std::memcmp(head, kSqliteMagic, sizeof head) == 0)
    return ReadNsight(path);
  if (static_cast<std::size_t>(in.gcount()) >= 16 &&
      std::string_view(head, sizeof head) == kRecordingMagic.substr(0, sizeof head))
    return ReadRecording(path);
  return ReadKineto(path);
}

Result<std::string> GpuKeyForDevice(std::string_view device_name) {
  // Board names the CUDA driver reports instead of the product's: Meta's A100 SXM4 40 GB
  // boards (HolisticTraceAnalysis's test traces: 108 SMs, 42.5 GB of device memory).
  if (device_name == "NVIDIA A100-PG509-200") return std::string("a100-sxm-40gb");
  std::string known;
  for (const std::string& key : netmodel::GpuKeys()) {
    const auto gpu = netmodel::FindGpu(key);
    if (gpu.ok() && gpu->name == device_name) return key;
    known += fmt::format("{}{} ({})", known.empty() ? "" : ", ", key, gpu.ok() ? gpu->name : "");
  }
  return Status::InvalidArgument(fmt::format(
      "the trace's GPU '{}' is none of the catalog's: give --gpu KEY (known: {})",
      device_name.empty() ? std::string("(not named)") : std::string(device_name), known));
}

Result<ImportResult> BuildProfile(const std::vector<TraceRead>& traces, std::string_view gpu_key,
                                  std::string_view source) {
  if (auto gpu = netmodel::FindGpu(gpu_key); !gpu.ok()) return gpu.status();
  using KernelKey = std::tuple<std::string, std::uint32_t, std::uint32_t, std::uint32_t,
                               std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>;
  using GemmKey = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  std::map<KernelKey, std::vector<double>> kernels;
  std::map<GemmKey, std::pair<std::string, std::vector<double>>> gemms;
  ImportResult result;
  for (const TraceRead& t : traces) {
    // Each GEMM call's kernels, summed (a split-K product launches a reduction too).
    std::vector<double> call_time(t.gemm_calls.size(), 0);
    std::vector<std::string> call_kernel(t.gemm_calls.size());
    for (const KernelRecord& k : t.kernels) {
      // The database is tab-separated, one row per line: a name keeps no tab or line break.
      std::string name = k.name;
      for (char& ch : name)
        if (ch == '\t' || ch == '\n' || ch == '\r') ch = ' ';
      kernels[{name, k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z, k.shared_mem}]
          .push_back(k.duration_us);
      result.kernel_time_us += k.duration_us;
      ++result.kernels;
      if (k.gemm_call >= 0) {
        const auto c = static_cast<std::size_t>(k.gemm_call);
        call_time[c] += k.duration_us;
        if (call_kernel[c].empty()) call_kernel[c] = name;
      }
    }
    for (std::size_t c = 0; c < t.gemm_calls.size(); ++c) {
      const GemmShape& g = t.gemm_calls[c];
      auto& [name, times] = gemms[{static_cast<int>(g.dtype), g.m, g.n, g.k, g.batch}];
      if (name.empty()) name = call_kernel[c];
      times.push_back(call_time[c]);
      ++result.gemm_calls;
    }
  }
  std::vector<timing::ProfileRow> rows;
  for (const auto& [key, times] : kernels) {
    timing::ProfileRow r;
    r.gpu = std::string(gpu_key);
    r.kernel = std::get<0>(key);
    r.grid = Dim3{std::get<1>(key), std::get<2>(key), std::get<3>(key)};
    r.block = Dim3{std::get<4>(key), std::get<5>(key), std::get<6>(key)};
    r.shared_mem = std::get<7>(key);
    r.stats = StatsOf(times);
    rows.push_back(std::move(r));
  }
  result.kernel_rows = rows.size();
  for (const auto& [key, named] : gemms) {
    timing::ProfileRow r;
    r.gpu = std::string(gpu_key);
    r.kernel = named.first;
    r.any_shape = true;
    r.gemm = GemmShape{std::get<1>(key), std::get<2>(key), std::get<3>(key), std::get<4>(key),
                       static_cast<DataType>(std::get<0>(key))};
    r.stats = StatsOf(named.second);
    rows.push_back(std::move(r));
  }
  result.gemm_rows = rows.size() - result.kernel_rows;
  result.database = timing::FormatProfile(
      rows,
      fmt::format("Imported by `myriad profile import` from {}: {} kernels ({} rows by name "
                  "and launch shape), {} GEMM calls ({} shapes). Durations in us; the "
                  "median is what Myriad uses.",
                  source, result.kernels, result.kernel_rows, result.gemm_calls, result.gemm_rows));
  return result;
}

}  // namespace myriad::emulator::profiling
