// The summary, the JSON report and the timeline of a run. Everything is formatted with fixed
// precision and written in a fixed order, so equal runs give byte-identical files.
#include "myriad/emulator/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "report/text.h"
#include "timing/kernel_names.h"

namespace myriad::emulator {
namespace {

// A kernel's name as a person reads it: demangled (`_Z4busyPf` is `busy(float*)`) and cut to
// kReadableName characters (a PyTorch kernel's demangled name can run to kilobytes); the JSON
// report keeps the name the program launched.
constexpr std::size_t kReadableName = 200;
std::string Readable(const std::string& name) {
  std::string readable = timing::DemangleKernelName(name);
  if (readable.size() > kReadableName) readable = readable.substr(0, kReadableName - 3) + "...";
  return readable;
}

// Flow fidelity: a collective's mean time with contention over its time alone.
double Slowdown(const CollectiveStats& c) {
  return c.duration > 0 ? static_cast<double>(c.flow_mean) / static_cast<double>(c.duration) : 1.0;
}

std::string Json(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string Us(SimTime t) { return fmt::format("{:.3f}", ToMicros(t)); }

struct Spread {
  SimTime min = 0, median = 0, max = 0;
};

template <typename Get>
Spread SpreadOf(const std::vector<RankResult>& ranks, Get get) {
  std::vector<SimTime> v;
  v.reserve(ranks.size());
  for (const RankResult& r : ranks) v.push_back(static_cast<SimTime>(get(r)));
  std::sort(v.begin(), v.end());
  if (v.empty()) return {};
  return {v.front(), v[(v.size() - 1) / 2], v.back()};
}

int SlowestRank(const RunResult& result) {
  int slowest = 0;
  SimTime latest = -1;
  for (const RankResult& r : result.ranks)
    if (r.end_time > latest) latest = r.end_time, slowest = r.rank;
  return slowest;
}

}  // namespace

std::string ByteSize(std::uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30)) return fmt::format("{:.2f} GiB", b / (1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.2f} MiB", b / (1ull << 20));
  if (bytes >= (1ull << 10)) return fmt::format("{:.2f} KiB", b / (1ull << 10));
  return fmt::format("{} B", bytes);
}

namespace {

// All kernel, copy and memset time the timing chain gave, and a part's share of it in percent.
SimTime KernelTime(const RunResult& result) {
  SimTime total = 0;
  for (const ProviderStats& p : result.kernel_timing) total += p.total;
  return total;
}
double Percent(SimTime part, SimTime whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// Which clock tensor-core kernels ran at, and what the power limit added to their time.
// The summary's list of kernels whose time rests on an assumption: their time, their share of
// all kernel time, their launches; the ten largest.
void AppendKernelsOnAnAssumption(std::string_view header, const std::vector<GuessedKernel>& kernels,
                                 const RunResult& result, std::string* out) {
  if (kernels.empty()) return;
  const SimTime kernel_time = KernelTime(result);
  *out += fmt::format("  {}\n", header);
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (i == 10) {
      *out += fmt::format("    ... and {} more\n", kernels.size() - 10);
      break;
    }
    const GuessedKernel& k = kernels[i];
    *out += fmt::format("    {:>14} us {:>5.1f}% {:>8} x {}\n", Us(k.total),
                        Percent(k.total, kernel_time), k.count, Readable(k.name));
  }
}

// A JSON array of kernels with their launches and time.
std::string KernelsJson(const std::vector<GuessedKernel>& kernels) {
  std::string out = "[";
  for (size_t i = 0; i < kernels.size(); ++i)
    out += fmt::format("{}\n    {{\"name\": {}, \"count\": {}, \"time_us\": {}}}", i ? "," : "",
                       Json(kernels[i].name), kernels[i].count, Us(kernels[i].total));
  return out + (kernels.empty() ? "]" : "\n  ]");
}

std::string ClocksLine(const RunResult& result) {
  const ClockStats& c = result.clocks;
  if (!c.sustained) return "clocks: every kernel at the short-benchmark clock (--clocks boost)";
  if (c.power_limit <= 0)
    return "clocks: the short-benchmark clock (no power model for this GPU: its sustained "
           "clock is not known)";
  return fmt::format(
      "clocks: tensor-core kernels at {:.3f} of the short-benchmark clock under the {:.0f} W "
      "limit (power model, docs/kernel-timing.md): +{} us, {:.1f}% of kernel time",
      c.clock, c.power_limit, Us(c.added), Percent(c.added, KernelTime(result)));
}

// What FP8 GEMMs' promotion of partial sums to FP32 added (empty: no FP8 GEMM was timed).
std::string Fp8AccumulationLine(const RunResult& result) {
  const Fp8AccumulationStats& f = result.fp8_accumulation;
  if (f.fp8_gemms == 0) return "";
  if (!f.promotion)
    return fmt::format(
        "FP8 accumulation: {} FP8 GEMMs all with fast accumulation (--fp8-accumulation fast)",
        f.fp8_gemms);
  return fmt::format(
      "FP8 accumulation: {} of {} FP8 GEMMs promote their partial sums to FP32 (Hopper, "
      "docs/kernel-timing.md): +{} us, {:.1f}% of kernel time",
      f.promoted, f.fp8_gemms, Us(f.added), Percent(f.added, KernelTime(result)));
}

// What communication in flight beside kernels added to their time, and under which model.
std::string OverlapLine(const RunResult& result) {
  const OverlapStats& o = result.overlap;
  std::string model;
  switch (o.model) {
    case OverlapModel::kShared:
      model =
          "NCCL's channels take SMs from tensor-core kernels, its traffic HBM bandwidth from "
          "memory-bound ones";
      break;
    case OverlapModel::kFlat:
      model = fmt::format("every kernel x{:.2f} beside a collective (--overlap-slowdown)",
                          1 + o.flat_slowdown);
      break;
    case OverlapModel::kOff:
      return "compute beside communication: not slowed (--overlap off)";
  }
  return fmt::format(
      "compute beside communication ({}; docs/engine.md): +{} us over {} kernels, {:.1f}% of "
      "kernel time",
      model, Us(o.added), o.slowed_kernels, Percent(o.added, KernelTime(result)));
}

std::string IterationNote(const RunResult& result) {
  const size_t n = result.iteration_ends.size();
  if (n < 2) return "(no two iteration markers: the whole run)";
  return fmt::format("(mean of {} iteration{} between iteration markers)", n - 1,
                     n == 2 ? "" : "s");
}

}  // namespace

std::string CommunicatorFamily(std::string_view comm) {
  return std::string(comm.substr(0, comm.find('.')));
}

std::vector<CollectiveGroup> GroupCollectives(const std::vector<CollectiveStats>& collectives) {
  // Keyed lookups: a folded run of 16,384 ranks has thousands of communicators in one group.
  using Key = std::tuple<std::string, int, std::uint64_t, int, int>;
  std::map<Key, std::size_t> index;
  std::vector<CollectiveGroup> groups;
  for (const CollectiveStats& c : collectives) {
    const std::string family = CommunicatorFamily(c.comm);
    const Key key{family, static_cast<int>(c.op), c.bytes, static_cast<int>(c.algorithm),
                  static_cast<int>(c.protocol)};
    auto [at, added] = index.emplace(key, groups.size());
    if (added) groups.push_back({family, c.op, c.bytes, c.algorithm, c.protocol, 0, 0, 0, 0});
    CollectiveGroup& g = groups[at->second];
    ++g.communicators;  // each (communicator, op, size) is one entry
    // Means weighted by calls, so a group's time is what its average call took.
    const double calls = static_cast<double>(c.calls);
    const double total = static_cast<double>(g.calls) + calls;
    if (total > 0) {
      g.alone_us =
          (g.alone_us * static_cast<double>(g.calls) + ToMicros(c.duration) * calls) / total;
      g.mean_us =
          (g.mean_us * static_cast<double>(g.calls) + ToMicros(c.flow_mean) * calls) / total;
    }
    g.calls += c.calls;
  }
  return groups;
}

std::string FormatSummary(const RunResult& result, const RunContext& context) {
  std::string out = fmt::format("myriad {}: {} on {} ({})\n", context.command, context.workload,
                                context.scenario_name, context.scenario_path);
  if (context.failure)
    out +=
        fmt::format("  FAILED (exit status {}): {}\n  the figures below are what ran until then\n",
                    context.failure->exit_status, context.failure->cause);
  out += fmt::format("  {} ranks | {} ops simulated | network model: {}\n\n", result.world_size,
                     result.simulated_ops, context.fidelity);
  out += fmt::format("iteration time   {:>14} us  {}\n", Us(result.iteration_time()),
                     IterationNote(result));
  out += fmt::format("total time       {:>14} us  (slowest rank: {})\n\n", Us(result.total_time),
                     SlowestRank(result));

  const Spread compute = SpreadOf(result.ranks, [](const RankResult& r) { return r.compute; });
  const Spread comm = SpreadOf(result.ranks, [](const RankResult& r) { return r.exposed_comm; });
  const Spread idle = SpreadOf(result.ranks, [](const RankResult& r) { return r.idle; });
  const Spread mem = SpreadOf(result.ranks, [](const RankResult& r) { return r.peak_memory; });
  out += fmt::format("per rank (us)          {:>14} {:>14} {:>14}\n", "min", "median", "max");
  out += fmt::format("  compute              {:>14} {:>14} {:>14}\n", Us(compute.min),
                     Us(compute.median), Us(compute.max));
  out += fmt::format("  exposed comm         {:>14} {:>14} {:>14}\n", Us(comm.min), Us(comm.median),
                     Us(comm.max));
  out += fmt::format("  idle                 {:>14} {:>14} {:>14}\n", Us(idle.min), Us(idle.median),
                     Us(idle.max));
  out += fmt::format("  peak memory          {:>14} {:>14} {:>14}\n\n",
                     ByteSize(static_cast<std::uint64_t>(mem.min)),
                     ByteSize(static_cast<std::uint64_t>(mem.median)),
                     ByteSize(static_cast<std::uint64_t>(mem.max)));

  out += "kernel timing (first answer wins)\n";
  for (const ProviderStats& p : result.kernel_timing)
    out += fmt::format("  {:<28} {:>10} ops {:>16} us\n", p.provider, p.ops, Us(p.total));
  out += "  " + ClocksLine(result) + "\n";
  if (const std::string fp8 = Fp8AccumulationLine(result); !fp8.empty()) out += "  " + fp8 + "\n";
  out += "  " + OverlapLine(result) + "\n";
  // Kernels whose time rests on a guess from their launch, or on a count whose loop bounds
  // read data a kernel computed on the GPU (which Myriad does not run).
  AppendKernelsOnAnAssumption(
      "kernels timed by a guess from their launch (docs/kernel-timing.md), largest first:",
      result.guessed_kernels, result, &out);
  AppendKernelsOnAnAssumption(
      "kernels counted from their code with loops over data computed on the GPU (not known: "
      "each such loop assumed to sweep its allocations once; docs/kernel-timing.md), largest "
      "first:",
      result.assumed_kernels, result, &out);
  if (!result.uncovered_kernels.empty()) {
    out += "  kernels without a measurement (fallback), most frequent first:\n";
    size_t shown = 0;
    for (const UncoveredKernel& k : result.uncovered_kernels) {
      if (++shown > 10) {
        out += fmt::format("    ... and {} more\n", result.uncovered_kernels.size() - 10);
        break;
      }
      out += fmt::format("    {:>8} x {}\n", k.count, Readable(k.name));
    }
  }
  if (!result.kernel_families.empty()) {
    // Which model carries how much of each family: a family timed mostly by a guess is a
    // guess, whatever its figure.
    SimTime kernel_time = 0;
    for (const FamilyStats& f : result.kernel_families) kernel_time += f.total;
    out += "\nkernel time by family, and the models that timed it (share of the family's time)\n";
    for (const FamilyStats& f : result.kernel_families) {
      std::string models;
      for (const ProviderStats& p : f.by_provider)
        models += fmt::format(
            "{}{} {:.1f}%", models.empty() ? "" : ", ", p.provider,
            f.total > 0 ? 100.0 * static_cast<double>(p.total) / static_cast<double>(f.total)
                        : 0.0);
      out += fmt::format(
          "  {:<14} {:>16} us {:>5.1f}% {:>10} ops  {}\n", f.family, Us(f.total),
          kernel_time > 0 ? 100.0 * static_cast<double>(f.total) / static_cast<double>(kernel_time)
                          : 0.0,
          f.ops, models);
    }
  }
  if (!result.collectives.empty()) {
    // One line per (communicator family, op, size, algorithm): the 64 data-parallel groups of
    // a folded run are one line, not 64; the JSON report lists every communicator.
    const bool flow = context.fidelity == "flow";
    const std::vector<CollectiveGroup> groups = GroupCollectives(result.collectives);
    out += fmt::format(
        "\ncollectives (network model: {}; by communicator family, each one in the JSON report)\n",
        context.fidelity);
    size_t width = 10;  // a live program's communicators are named by their ids: wider
    for (const CollectiveGroup& g : groups) width = std::max(width, g.family.size());
    out += fmt::format("  {:<{}} {:<14} {:>12} {:>6} {:>8} {:>14}", "family", width, "op", "size",
                       "comms", "calls", "us per call");
    if (flow) out += fmt::format(" {:>14} {:>9}", "us alone", "slowdown");
    out += "  algorithm\n";
    for (const CollectiveGroup& g : groups) {
      out += fmt::format("  {:<{}} {:<14} {:>12} {:>6} {:>8} {:>14}", g.family, width,
                         netmodel::ToString(g.op), ByteSize(g.bytes), g.communicators, g.calls,
                         fmt::format("{:.3f}", flow ? g.mean_us : g.alone_us));
      if (flow)
        out += fmt::format(" {:>14.3f} {:>8.2f}x", g.alone_us,
                           g.alone_us > 0 ? g.mean_us / g.alone_us : 1.0);
      out +=
          fmt::format("  {}/{}\n", netmodel::ToString(g.algorithm), netmodel::ToString(g.protocol));
    }
  }
  if (!result.busiest_links.empty()) {
    out += fmt::format(
        "\nbusiest links (flow model; {} links carried traffic, other jobs' "
        "included)\n",
        result.links_used);
    for (size_t i = 0; i < std::min<size_t>(5, result.busiest_links.size()); ++i) {
      const LinkUsage& l = result.busiest_links[i];
      out += fmt::format("  {:<16} {:>6.1f}% busy  {:>12} carried\n", l.name, 100 * l.utilisation,
                         ByteSize(static_cast<std::uint64_t>(l.bytes)));
    }
  }
  if (!context.notes.empty() || !result.implausible_kernels.empty()) out += "\n";
  for (const ImplausibleKernel& k : result.implausible_kernels)
    out += fmt::format("error: kernel {} (timed by {}): {}; its duration is not a prediction\n",
                       Readable(k.name), k.provider, k.why);
  for (const std::string& note : context.notes) out += "note: " + note + "\n";
  return out;
}

std::string ReportJson(const RunResult& result, const RunContext& context) {
  auto spread = [](const Spread& s) {
    return fmt::format("{{\"min\": {}, \"median\": {}, \"max\": {}}}", Us(s.min), Us(s.median),
                       Us(s.max));
  };
  std::string out = "{\n";
  out += "  \"schema_version\": 1,\n";
  out += fmt::format("  \"command\": {},\n", Json(context.command));
  out += fmt::format("  \"scenario\": {{\"name\": {}, \"path\": {}}},\n",
                     Json(context.scenario_name), Json(context.scenario_path));
  out += fmt::format("  \"workload\": {},\n", Json(context.workload));
  out += fmt::format("  \"network_fidelity\": {},\n", Json(context.fidelity));
  if (context.failure) {
    std::string consequences;
    for (const std::string& c : context.failure->consequences)
      consequences += (consequences.empty() ? "" : ", ") + Json(c);
    out += fmt::format(
        "  \"failure\": {{\"cause\": {}, \"exit_status\": {}, \"consequences\": [{}]}},\n",
        Json(context.failure->cause), context.failure->exit_status, consequences);
  }
  out += fmt::format("  \"world_size\": {},\n", result.world_size);
  out += fmt::format("  \"iteration_time_us\": {},\n", Us(result.iteration_time()));
  out += fmt::format("  \"iterations\": {},\n",
                     result.iteration_ends.size() < 2 ? 0 : result.iteration_ends.size() - 1);
  out += fmt::format("  \"total_time_us\": {},\n", Us(result.total_time));
  out += fmt::format("  \"slowest_rank\": {},\n", SlowestRank(result));
  out += fmt::format("  \"simulated_ops\": {},\n", result.simulated_ops);
  for (const auto& [key, value] : context.extra)
    out += fmt::format("  {}: {},\n", Json(key), value);
  out += fmt::format(
      "  \"breakdown_us\": {{\"compute\": {}, \"exposed_comm\": {}, \"idle\": {}}},\n",
      spread(SpreadOf(result.ranks, [](const RankResult& r) { return r.compute; })),
      spread(SpreadOf(result.ranks, [](const RankResult& r) { return r.exposed_comm; })),
      spread(SpreadOf(result.ranks, [](const RankResult& r) { return r.idle; })));
  const Spread mem = SpreadOf(result.ranks, [](const RankResult& r) { return r.peak_memory; });
  out += fmt::format("  \"peak_memory_bytes\": {{\"min\": {}, \"median\": {}, \"max\": {}}},\n",
                     mem.min, mem.median, mem.max);
  out += "  \"kernel_timing\": [";
  for (size_t i = 0; i < result.kernel_timing.size(); ++i) {
    const ProviderStats& p = result.kernel_timing[i];
    out += fmt::format("{}\n    {{\"provider\": {}, \"ops\": {}, \"time_us\": {}}}", i ? "," : "",
                       Json(p.provider), p.ops, Us(p.total));
  }
  out += "\n  ],\n  \"guessed_kernels\": " + KernelsJson(result.guessed_kernels);
  out += ",\n  \"assumed_kernels\": " + KernelsJson(result.assumed_kernels);
  out += ",\n  \"uncovered_kernels\": [";
  for (size_t i = 0; i < result.uncovered_kernels.size(); ++i)
    out += fmt::format("{}\n    {{\"name\": {}, \"count\": {}}}", i ? "," : "",
                       Json(result.uncovered_kernels[i].name), result.uncovered_kernels[i].count);
  out += result.uncovered_kernels.empty() ? "],\n" : "\n  ],\n";
  out += "  \"kernel_families\": [";
  for (size_t i = 0; i < result.kernel_families.size(); ++i) {
    const FamilyStats& f = result.kernel_families[i];
    std::string models;
    for (const ProviderStats& p : f.by_provider)
      models += fmt::format("{}{{\"provider\": {}, \"ops\": {}, \"time_us\": {}}}",
                            models.empty() ? "" : ", ", Json(p.provider), p.ops, Us(p.total));
    out += fmt::format("{}\n    {{\"family\": {}, \"ops\": {}, \"time_us\": {}, \"models\": [{}]}}",
                       i ? "," : "", Json(f.family), f.ops, Us(f.total), models);
  }
  out += result.kernel_families.empty() ? "],\n" : "\n  ],\n";
  out += fmt::format(
      "  \"clocks\": {{\"mode\": {}, \"power_limit_w\": {}, \"tensor_clock\": {}, "
      "\"added_us\": {}}},\n",
      Json(result.clocks.sustained ? "sustained" : "boost"),
      fmt::format("{:.0f}", result.clocks.power_limit), fmt::format("{:.4f}", result.clocks.clock),
      Us(result.clocks.added));
  out += fmt::format(
      "  \"fp8_accumulation\": {{\"mode\": {}, \"fp8_gemms\": {}, \"promoted\": {}, "
      "\"added_us\": {}}},\n",
      Json(result.fp8_accumulation.promotion ? "as-called" : "fast"),
      result.fp8_accumulation.fp8_gemms, result.fp8_accumulation.promoted,
      Us(result.fp8_accumulation.added));
  out += fmt::format(
      "  \"overlap\": {{\"model\": {}, \"flat_slowdown\": {}, \"added_us\": {}, "
      "\"slowed_kernels\": {}}},\n",
      Json(ToString(result.overlap.model)), fmt::format("{:.4f}", result.overlap.flat_slowdown),
      Us(result.overlap.added), result.overlap.slowed_kernels);
  if (!result.implausible_kernels.empty()) {
    out += "  \"kernel_errors\": [";
    for (size_t i = 0; i < result.implausible_kernels.size(); ++i) {
      const ImplausibleKernel& k = result.implausible_kernels[i];
      out += fmt::format("{}\n    {{\"name\": {}, \"provider\": {}, \"error\": {}}}", i ? "," : "",
                         Json(k.name), Json(k.provider), Json(k.why));
    }
    out += "\n  ],\n";
  }
  out += "  \"collectives\": [";
  for (size_t i = 0; i < result.collectives.size(); ++i) {
    const CollectiveStats& c = result.collectives[i];
    // Flow fidelity: time_us is the mean per call with contention; alone_us the analytical
    // time, max_us the longest call, slowdown their ratio.
    const bool flow = context.fidelity == "flow";
    std::string flow_keys;
    if (flow)
      flow_keys = fmt::format(", \"alone_us\": {}, \"max_us\": {}, \"slowdown\": {:.4f}",
                              Us(c.duration), Us(c.flow_max), Slowdown(c));
    out += fmt::format(
        "{}\n    {{\"comm\": {}, \"op\": {}, \"bytes\": {}, \"calls\": {}, \"time_us\": {}, "
        "\"algorithm\": {}, \"protocol\": {}, \"model\": {}{}}}",
        i ? "," : "", Json(c.comm), Json(netmodel::ToString(c.op)), c.bytes, c.calls,
        Us(flow ? c.flow_mean : c.duration), Json(netmodel::ToString(c.algorithm)),
        Json(netmodel::ToString(c.protocol)), Json(context.fidelity), flow_keys);
  }
  out += result.collectives.empty() ? "],\n" : "\n  ],\n";
  if (context.fidelity == "flow") {
    out += fmt::format("  \"links_used\": {},\n  \"busiest_links\": [", result.links_used);
    for (size_t i = 0; i < result.busiest_links.size(); ++i) {
      const LinkUsage& l = result.busiest_links[i];
      out += fmt::format("{}\n    {{\"link\": {}, \"bytes\": {:.0f}, \"utilisation\": {:.4f}}}",
                         i ? "," : "", Json(l.name), l.bytes, l.utilisation);
    }
    out += result.busiest_links.empty() ? "],\n" : "\n  ],\n";
  }
  out += "  \"ranks\": [";
  for (size_t i = 0; i < result.ranks.size(); ++i) {
    const RankResult& r = result.ranks[i];
    out += fmt::format(
        "{}\n    {{\"rank\": {}, \"end_time_us\": {}, \"compute_us\": {}, \"exposed_comm_us\": "
        "{}, \"idle_us\": {}, \"peak_memory_bytes\": {}, \"ops\": {}{}}}",
        i ? "," : "", r.rank, Us(r.end_time), Us(r.compute), Us(r.exposed_comm), Us(r.idle),
        r.peak_memory, r.ops,
        r.mirror_of >= 0 ? fmt::format(", \"mirror_of\": {}", r.mirror_of) : std::string());
  }
  out += result.ranks.empty() ? "]" : "\n  ]";
  if (!context.notes.empty()) {
    std::string notes;
    for (const std::string& note : context.notes) notes += (notes.empty() ? "" : ", ") + Json(note);
    out += fmt::format(",\n  \"notes\": [{}]", notes);
  }
  out += "\n}\n";
  return out;
}

std::string TimelineJson(const RunResult& result, const RunContext& context) {
  // Track ids: the host thread first, then the default streams, then created streams.
  auto tid = [](std::int32_t track) {
    if (track == kHostTrack) return 0;
    if (track == kPerThreadStream) return 1;
    return track + 2;
  };
  auto track_name = [](std::int32_t track) -> std::string {
    if (track == kHostTrack) return "host";
    if (track == kPerThreadStream) return "stream per-thread";
    if (track == kLegacyStream) return "stream 0 (legacy default)";
    return fmt::format("stream {}", track);
  };
  std::string out = "{\"displayTimeUnit\": \"ns\", \"otherData\": {";
  out += fmt::format("\"scenario\": {}, \"workload\": {}, \"ranks_shown\": {}, \"world_size\": {}",
                     Json(context.scenario_name), Json(context.workload),
                     result.timeline_ranks.size(), result.world_size);
  out += "},\n\"traceEvents\": [\n";
  bool first = true;
  auto emit = [&](const std::string& event) {
    out += first ? "  " : ",\n  ";
    out += event;
    first = false;
  };
  for (int rank : result.timeline_ranks) {
    emit(
        fmt::format("{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {}, \"args\": "
                    "{{\"name\": \"rank {}\"}}}}",
                    rank, rank));
    emit(
        fmt::format("{{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": {}, \"args\": "
                    "{{\"sort_index\": {}}}}}",
                    rank, rank));
  }
  // Thread names for every track that has a slice, in order of first appearance.
  std::vector<std::pair<int, std::int32_t>> named;
  for (const TimelineSlice& s : result.timeline) {
    const auto key = std::make_pair(s.rank, s.track);
    if (std::find(named.begin(), named.end(), key) != named.end()) continue;
    named.push_back(key);
    emit(
        fmt::format("{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": {}, "
                    "\"args\": {{\"name\": {}}}}}",
                    s.rank, tid(s.track), Json(track_name(s.track))));
  }
  // Enclosing slices first at equal start, so viewers nest them.
  std::vector<const TimelineSlice*> slices;
  slices.reserve(result.timeline.size());
  for (const TimelineSlice& s : result.timeline) slices.push_back(&s);
  std::stable_sort(slices.begin(), slices.end(),
                   [](const TimelineSlice* a, const TimelineSlice* b) {
                     return std::tie(a->rank, a->track, a->start, b->duration) <
                            std::tie(b->rank, b->track, b->start, a->duration);
                   });
  for (const TimelineSlice* s : slices)
    emit(fmt::format(
        "{{\"ph\": \"X\", \"pid\": {}, \"tid\": {}, \"ts\": {:.6f}, \"dur\": "
        "{:.6f}, \"name\": {}, \"cat\": {}, \"args\": {{{}}}}}",
        s->rank, tid(s->track), ToMicros(s->start), ToMicros(s->duration), Json(s->name),
        Json(s->category), s->detail.empty() ? "" : "\"detail\": " + Json(s->detail)));
  for (const TimelineMarker& m : result.markers)
    emit(
        fmt::format("{{\"ph\": \"i\", \"s\": \"p\", \"pid\": {}, \"tid\": 0, \"ts\": {:.6f}, "
                    "\"name\": {}}}",
                    m.rank, ToMicros(m.time), Json(m.label)));
  out += "\n]}\n";
  return out;
}

}  // namespace myriad::emulator
