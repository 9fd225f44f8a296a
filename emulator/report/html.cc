// The HTML report (`--html FILE`): one self-contained page, inline SVG and CSS, nothing fetched,
// for a person to open in a browser. Plain SVG of our own (docs/report-html.md says why).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "myriad/emulator/report.h"
#include "myriad/html_escape.h"
#include "report/text.h"
#include "timing/kernel_names.h"

namespace myriad::emulator {
namespace {

// Bars and rows per chart: enough to see the shape of 16,384 ranks, small enough to read.
constexpr std::size_t kMaxRankRows = 32;
constexpr std::size_t kMaxTimelineRows = 48;
constexpr int kTimelineColumns = 800;  // the overview's resolution, in pixels

// Fixed colours, so the same thing looks the same in every report (ColorBrewer Dark2 + greys).
constexpr const char* kCompute = "#1b9e77";
constexpr const char* kIdle = "#d9d9d9";
constexpr const char* kFamilyColours[] = {"#d95f02", "#7570b3", "#e7298a", "#66a61e",
                                          "#e6ab02", "#a6761d", "#666666"};

std::string Us(double us) {
  if (us >= 1e6) return fmt::format("{:.3f} s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.3f} ms", us / 1e3);
  return fmt::format("{:.3f} us", us);
}

// Up to `n` of `count` indices, evenly spread, the first and last included.
std::vector<std::size_t> Sample(std::size_t count, std::size_t n) {
  std::vector<std::size_t> out;
  if (count == 0) return out;
  if (count <= n) {
    for (std::size_t i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  for (std::size_t i = 0; i < n; ++i) out.push_back(i * (count - 1) / (n - 1));
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct Segment {
  std::string label;
  double value = 0;
  std::string colour;
};

// Horizontal stacked bars, one row per label, scaled to the largest row's total.
std::string StackedBars(const std::string& id, const std::vector<std::string>& rows,
                        const std::vector<std::vector<Segment>>& segments,
                        const std::string& unit_note) {
  constexpr double kLabel = 110, kWidth = 900, kRow = 18;
  double top = 0;
  for (const auto& row : segments) {
    double total = 0;
    for (const Segment& s : row) total += s.value;
    top = std::max(top, total);
  }
  if (top <= 0) top = 1;
  const double height = kRow * static_cast<double>(rows.size()) + 24;
  std::string svg = fmt::format(
      "<svg id=\"{}\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" "
      "height=\"{:.0f}\">\n",
      id, kWidth, height);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double y = kRow * static_cast<double>(r);
    svg += fmt::format(
        "<text x=\"{:.0f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n",
        kLabel - 6, y + 12, EscapeHtml(rows[r]));
    double x = kLabel;
    for (const Segment& s : segments[r]) {
      const double w = (kWidth - kLabel - 10) * s.value / top;
      if (w <= 0) continue;
      svg += fmt::format(
          "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.0f}\" fill=\"{}\">"
          "<title>{}: {}</title></rect>\n",
          x, y + 2, w, kRow - 4, s.colour, EscapeHtml(rows[r] + ", " + s.label),
          EscapeHtml(unit_note.empty() ? Us(s.value)
                                       : fmt::format("{:.1f}{}", s.value, unit_note)));
      x += w;
    }
  }
  svg += fmt::format(
      "<text x=\"{:.0f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#555\">0</text>"
      "<text x=\"{:.0f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#555\" "
      "text-anchor=\"end\">{}</text>\n</svg>\n",
      kLabel, height - 6, kWidth - 10, height - 6,
      EscapeHtml(unit_note.empty() ? Us(top) : fmt::format("{:.1f}{}", top, unit_note)));
  return svg;
}

std::string Legend(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out = "<p class=\"legend\">";
  for (const auto& [label, colour] : entries)
    out += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", colour, EscapeHtml(label));
  return out + "</p>\n";
}

// The colour of each communicator family, in order of first appearance.
class FamilyColours {
 public:
  const char* operator()(const std::string& family) {
    auto it = std::find(order_.begin(), order_.end(), family);
    if (it == order_.end()) {
      order_.push_back(family);
      it = order_.end() - 1;
    }
    const auto i = static_cast<std::size_t>(it - order_.begin());
    return kFamilyColours[std::min(i, std::size(kFamilyColours) - 1)];
  }
  const std::vector<std::string>& order() const { return order_; }

 private:
  std::vector<std::string> order_;
};

std::string Breakdown(const RunResult& result, FamilyColours& colours) {
  const std::vector<std::size_t> picked = Sample(result.ranks.size(), kMaxRankRows);
  std::vector<std::string> rows;
  std::vector<std::vector<Segment>> segments;
  // Families first seen over all ranks, so colours do not depend on the sample.
  for (const RankResult& r : result.ranks)
    for (const auto& [comm, time] : r.exposed_by_comm) colours(CommunicatorFamily(comm));
  for (std::size_t i : picked) {
    const RankResult& r = result.ranks[i];
    rows.push_back(fmt::format("rank {}", r.rank));
    std::vector<Segment> row = {{"compute", ToMicros(r.compute), kCompute}};
    std::map<std::string, double> by_family;
    for (const auto& [comm, time] : r.exposed_by_comm)
      by_family[CommunicatorFamily(comm)] += ToMicros(time);
    // exposed_by_comm counts an interval once per communicator in flight: scale to the rank's
    // exposed total, so the bar adds up to the rank's time.
    double counted = 0;
    for (const auto& [family, us] : by_family) counted += us;
    const double scale = counted > 0 ? ToMicros(r.exposed_comm) / counted : 0;
    for (const std::string& family : colours.order())
      if (by_family.count(family))
        row.push_back({"exposed " + family, by_family[family] * scale, colours(family)});
    if (counted == 0 && r.exposed_comm > 0)
      row.push_back({"exposed communication", ToMicros(r.exposed_comm), kFamilyColours[6]});
    row.push_back({"idle", ToMicros(r.idle), kIdle});
    segments.push_back(std::move(row));
  }
  std::vector<std::pair<std::string, std::string>> legend = {{"compute", kCompute}};
  for (const std::string& family : colours.order())
    legend.emplace_back("exposed " + family + " communication", colours(family));
  legend.emplace_back("idle (waiting: pipeline bubble, peers, the host)", kIdle);
  std::string out = "<h2>Where the time goes</h2>\n";
  out += fmt::format(
      "<p>Each rank's time to its end: compute (kernels, copies), communication not hidden "
      "behind compute, per communicator family, and idle time. {} of {} ranks shown, evenly "
      "sampled.</p>\n",
      picked.size(), result.ranks.size());
  out += Legend(legend);
  return out + StackedBars("breakdown", rows, segments, "");
}

std::string Timeline(const RunResult& result, FamilyColours& colours) {
  if (result.timeline.empty() || result.total_time <= 0) return "";
  // Rows: (rank, track) in order; each row's time cut into columns coloured by what took most
  // of each (compute, communication by family, waits), runs of one colour merged.
  // The slices are sorted by (rank, track, start) (engine Collect): each row is one run of
  // them, found in one pass.
  struct Row {
    int rank;
    std::int32_t track;
    std::size_t begin, end;  // its slices in result.timeline
  };
  std::vector<Row> rows;
  for (std::size_t i = 0; i < result.timeline.size(); ++i) {
    const TimelineSlice& s = result.timeline[i];
    if (rows.empty() || rows.back().rank != s.rank || rows.back().track != s.track)
      rows.push_back({s.rank, s.track, i, i});
    rows.back().end = i + 1;
  }
  const std::size_t shown = std::min(rows.size(), kMaxTimelineRows);
  const double span = static_cast<double>(result.total_time);
  auto colour_of = [&](const TimelineSlice& s) -> std::string {
    if (s.category == "kernel" || s.category == "memcpy" || s.category == "memset") return kCompute;
    if (s.category == "communication") {
      // "allreduce count=... on 'dp.t0.p0'": the family of the communicator it names.
      const std::size_t on = s.name.rfind(" on '");
      if (on == std::string::npos) return kFamilyColours[6];  // an NCCL group of several
      return colours(CommunicatorFamily(s.name.substr(on + 5, s.name.size() - on - 6)));
    }
    if (s.category == "host") return "#a6cee3";
    return "";  // waits and markers: left blank
  };
  constexpr double kLabel = 150, kRow = 14;
  const double width = kLabel + kTimelineColumns + 10;
  const double height = kRow * static_cast<double>(shown) + 24;
  std::string svg = fmt::format(
      "<svg id=\"timeline\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" "
      "height=\"{:.0f}\">\n",
      width, height);
  for (std::size_t r = 0; r < shown; ++r) {
    const int rank = rows[r].rank;
    const std::int32_t track = rows[r].track;
    std::vector<std::map<std::string, double>> columns(kTimelineColumns);
    for (std::size_t i = rows[r].begin; i < rows[r].end; ++i) {
      const TimelineSlice& s = result.timeline[i];
      if (s.duration <= 0) continue;
      const std::string colour = colour_of(s);
      if (colour.empty()) continue;
      const double a = static_cast<double>(s.start) / span * kTimelineColumns;
      const double b = static_cast<double>(s.start + s.duration) / span * kTimelineColumns;
      for (int c = std::max(0, static_cast<int>(a));
           c < std::min(kTimelineColumns, static_cast<int>(std::ceil(b))); ++c)
        columns[static_cast<std::size_t>(c)][colour] +=
            std::min<double>(b, c + 1) - std::max<double>(a, c);
    }
    const double y = kRow * static_cast<double>(r);
    const std::string label = track == kHostTrack ? fmt::format("rank {} host", rank)
                                                  : fmt::format("rank {} stream {}", rank, track);
    svg += fmt::format(
        "<text x=\"{:.0f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\">{}</text>\n",
        kLabel - 6, y + 10, EscapeHtml(label));
    int start = 0;
    std::string current;
    auto flush = [&](int end) {
      if (!current.empty() && end > start)
        svg += fmt::format(
            "<rect x=\"{:.0f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.0f}\" fill=\"{}\"/>\n",
            kLabel + start, y + 1, end - start, kRow - 2, current);
    };
    for (int c = 0; c < kTimelineColumns; ++c) {
      std::string best;
      double most = 0.25;  // a column less than a quarter busy stays blank
      for (const auto& [colour, busy] : columns[static_cast<std::size_t>(c)])
        if (busy > most) most = busy, best = colour;
      if (best != current) {
        flush(c);
        start = c;
        current = best;
      }
    }
    flush(kTimelineColumns);
  }
  svg += fmt::format(
      "<text x=\"{:.0f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#555\">0</text><text x=\"{:.0f}\" "
      "y=\"{:.1f}\" font-size=\"10\" fill=\"#555\" text-anchor=\"end\">{}</text>\n</svg>\n",
      kLabel, height - 6, width - 10, height - 6, EscapeHtml(Us(ToMicros(result.total_time))));
  std::string out = "<h2>Timeline overview</h2>\n";
  out += fmt::format(
      "<p>The whole run, {} of {} recorded rows (the ranks the timeline sampled, each host "
      "thread and stream); each pixel shows what took most of its time. For every slice, "
      "write <code>--timeline FILE</code> and open it in Perfetto.</p>\n",
      shown, rows.size());
  std::vector<std::pair<std::string, std::string>> legend = {{"compute", kCompute},
                                                             {"host work", "#a6cee3"}};
  for (const std::string& family : colours.order())
    legend.emplace_back(family + " communication", colours(family));
  return out + Legend(legend) + svg;
}

std::string Communication(const RunResult& result, FamilyColours& colours, bool flow) {
  if (result.collectives.empty()) return "";
  const std::vector<CollectiveGroup> groups = GroupCollectives(result.collectives);
  std::map<std::string, double> per_family;
  for (const CollectiveGroup& g : groups)
    per_family[g.family] += static_cast<double>(g.calls) * (flow ? g.mean_us : g.alone_us);
  std::vector<std::string> rows;
  std::vector<std::vector<Segment>> segments;
  for (const auto& [family, us] : per_family) {
    rows.push_back(family);
    segments.push_back({{"communication", us, colours(family)}});
  }
  std::string out = "<h2>Communication per communicator family</h2>\n";
  out +=
      "<p>Time of all calls, summed over each family's communicators (not all of it is "
      "exposed: see above).</p>\n";
  out += StackedBars("communication", rows, segments, "");
  out +=
      "<table><tr><th>family</th><th>op</th><th>size</th><th>communicators</th><th>calls</th>"
      "<th>per call</th><th>algorithm</th></tr>\n";
  for (const CollectiveGroup& g : groups)
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td>"
        "</tr>\n",
        EscapeHtml(g.family), netmodel::ToString(g.op), ByteSize(g.bytes), g.communicators, g.calls,
        Us(flow ? g.mean_us : g.alone_us), netmodel::ToString(g.algorithm),
        netmodel::ToString(g.protocol));
  return out + "</table>\n";
}

std::string Memory(const RunResult& result, const RunContext& context) {
  const std::vector<std::size_t> picked = Sample(result.ranks.size(), kMaxRankRows);
  const double hbm = context.cluster != nullptr ? context.cluster->gpu.hbm_bytes : 0;
  constexpr double kLabel = 110, kWidth = 900, kRow = 18;
  double top = hbm;
  for (std::size_t i : picked)
    top = std::max(top, static_cast<double>(result.ranks[i].peak_memory));
  if (top <= 0) return "";
  const double height = kRow * static_cast<double>(picked.size()) + 24;
  std::string svg = fmt::format(
      "<svg id=\"memory\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" "
      "height=\"{:.0f}\">\n",
      kWidth, height);
  const double scale = (kWidth - kLabel - 10) / top;
  for (std::size_t r = 0; r < picked.size(); ++r) {
    const RankResult& rank = result.ranks[picked[r]];
    const double y = kRow * static_cast<double>(r);
    const double peak = static_cast<double>(rank.peak_memory);
    svg += fmt::format(
        "<text x=\"{:.0f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">rank {}</text>"
        "<rect x=\"{:.0f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.0f}\" fill=\"{}\">"
        "<title>rank {}: peak {}</title></rect>\n",
        kLabel - 6, y + 12, rank.rank, kLabel, y + 2, peak * scale, kRow - 4,
        peak > hbm && hbm > 0 ? "#d7301f" : "#7570b3", rank.rank, ByteSize(rank.peak_memory));
  }
  if (hbm > 0)
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"0\" x2=\"{0:.1f}\" y2=\"{1:.0f}\" stroke=\"#c00\" "
        "stroke-dasharray=\"4 3\"/><text x=\"{2:.1f}\" y=\"{3:.0f}\" font-size=\"10\" "
        "fill=\"#c00\" "
        "text-anchor=\"end\">HBM {4}</text>\n",
        kLabel + hbm * scale, height - 20, kLabel + hbm * scale - 4, height - 6,
        ByteSize(static_cast<std::uint64_t>(hbm)));
  svg += "</svg>\n";
  std::string out = "<h2>Memory per GPU against HBM</h2>\n";
  out += fmt::format(
      "<p>Each rank's peak of device memory allocated (what its mallocs reached), against the "
      "GPU's HBM{}. {} of {} ranks shown.</p>\n",
      context.cluster != nullptr ? " (" + EscapeHtml(context.cluster->gpu.name) + ")" : "",
      picked.size(), result.ranks.size());
  return out + svg;
}

std::string Coverage(const RunResult& result) {
  double total = 0;
  for (const ProviderStats& p : result.kernel_timing) total += ToMicros(p.total);
  if (total <= 0) return "";
  static const std::map<std::string, std::string> kColours = {
      {"trace", "#1b9e77"},       {"profile", "#1b9e77"}, {"pytorch kernels", "#66a61e"},
      {"kernel code", "#66a61e"}, {"library", "#7570b3"}, {"launch guess", "#e6ab02"},
      {"fallback", "#d7301f"}};
  std::vector<Segment> row;
  std::vector<std::pair<std::string, std::string>> legend;
  for (const ProviderStats& p : result.kernel_timing) {
    if (p.total <= 0) continue;
    const auto it = kColours.find(p.provider);
    const std::string colour = it != kColours.end() ? it->second : "#999999";
    row.push_back({p.provider, 100 * ToMicros(p.total) / total, colour});
    legend.emplace_back(fmt::format("{} ({:.1f}%)", p.provider, 100 * ToMicros(p.total) / total),
                        colour);
  }
  std::string out = "<h2>Kernel-timing coverage</h2>\n";
  out +=
      "<p>Which source timed the kernel time of the run (first answer wins: a trace's "
      "durations, measured profiles, PyTorch kernel models, library models, a guess from the "
      "launch, the fallback). Guesses and the fallback are what the prediction is least sure "
      "of.</p>\n";
  out += Legend(legend) + StackedBars("coverage", {"kernel time"}, {row}, "%");
  if (!result.kernel_families.empty()) {
    // One bar per kernel family: which models timed its share of the kernel time.
    std::vector<std::string> labels;
    std::vector<std::vector<Segment>> rows;
    for (const FamilyStats& f : result.kernel_families) {
      labels.push_back(fmt::format("{} ({:.1f}%)", f.family, 100 * ToMicros(f.total) / total));
      std::vector<Segment> family;
      for (const ProviderStats& p : f.by_provider) {
        const auto it =
            kColours.find(p.provider.substr(0, 7) == "profile" ? "profile" : p.provider);
        family.push_back({p.provider, 100 * ToMicros(p.total) / total,
                          it != kColours.end() ? it->second : "#999999"});
      }
      rows.push_back(std::move(family));
    }
    out +=
        "<p>By kernel family (share of all kernel time, coloured by the model that timed "
        "it):</p>\n";
    out += StackedBars("families", labels, rows, "%");
  }
  if (!result.guessed_kernels.empty() || !result.uncovered_kernels.empty() ||
      !result.assumed_kernels.empty()) {
    out += "<table><tr><th>kernel</th><th>calls</th><th>timed by</th></tr>\n";
    for (std::size_t i = 0; i < std::min<std::size_t>(10, result.assumed_kernels.size()); ++i)
      out += fmt::format(
          "<tr><td class=\"name\">{}</td><td>{}</td><td>its code, with loops over data computed "
          "on the GPU assumed</td></tr>\n",
          EscapeHtml(timing::DemangleKernelName(result.assumed_kernels[i].name)),
          result.assumed_kernels[i].count);
    for (std::size_t i = 0; i < std::min<std::size_t>(10, result.guessed_kernels.size()); ++i)
      out += fmt::format("<tr><td class=\"name\">{}</td><td>{}</td><td>launch guess</td></tr>\n",
                         EscapeHtml(timing::DemangleKernelName(result.guessed_kernels[i].name)),
                         result.guessed_kernels[i].count);
    for (std::size_t i = 0; i < std::min<std::size_t>(10, result.uncovered_kernels.size()); ++i)
      out += fmt::format("<tr><td class=\"name\">{}</td><td>{}</td><td>fallback</td></tr>\n",
                         EscapeHtml(timing::DemangleKernelName(result.uncovered_kernels[i].name)),
                         result.uncovered_kernels[i].count);
    out += "</table>\n";
  }
  return out;
}

std::string Links(const RunResult& result) {
  if (result.busiest_links.empty()) return "";
  std::vector<std::string> rows;
  std::vector<std::vector<Segment>> segments;
  for (const LinkUsage& l : result.busiest_links) {
    rows.push_back(l.name);
    segments.push_back({{"busy", 100 * l.utilisation, l.utilisation > 0.8 ? "#d7301f" : "#e6ab02"},
                        {"free", 100 * std::max(0.0, 1 - l.utilisation), "#eeeeee"}});
  }
  std::string out = "<h2>Network links (flow model)</h2>\n";
  out += fmt::format(
      "<p id=\"hottest\">Hottest link: <b>{}</b>, {:.1f}% busy over the run. The {} busiest of "
      "the {} links that carried traffic (other jobs' included), as a share of each link's "
      "rate over the whole run.</p>\n",
      EscapeHtml(result.busiest_links.front().name), 100 * result.busiest_links.front().utilisation,
      result.busiest_links.size(), result.links_used);
  return out + StackedBars("links", rows, segments, "%");
}

}  // namespace

std::string ReportHtml(const RunResult& result, const RunContext& context) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Myriad " +
      EscapeHtml(context.command) + ": " + EscapeHtml(context.workload) + "</title>\n" +
      "<style>\nbody{font-family:sans-serif;margin:2em;color:#222;max-width:1100px}\n"
      "h2{margin-top:1.6em;border-bottom:1px solid #ddd}\n"
      "table{border-collapse:collapse;font-size:12px;margin-top:.6em}\n"
      "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\ntd.name{text-align:left}\n"
      ".legend span{margin-right:1.2em;font-size:12px}\n"
      ".legend i{display:inline-block;width:10px;height:10px;margin-right:4px}\n"
      "dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dt{color:#555}\n"
      "</style>\n</head>\n<body>\n";
  out += fmt::format("<h1>Myriad {}: {}</h1>\n<p>on {} ({})</p>\n", EscapeHtml(context.command),
                     EscapeHtml(context.workload), EscapeHtml(context.scenario_name),
                     EscapeHtml(context.scenario_path));
  if (context.failure)
    out += fmt::format(
        "<p class=\"failure\"><b>FAILED</b> (exit status {}): {}; the figures are "
        "what ran until then.</p>\n",
        context.failure->exit_status, EscapeHtml(context.failure->cause));
  out += "<dl>\n";
  auto item = [&](const std::string& name, const std::string& value) {
    out += "<dt>" + EscapeHtml(name) + "</dt><dd>" + EscapeHtml(value) + "</dd>\n";
  };
  item("iteration time", Us(ToMicros(result.iteration_time())));
  item("total time", Us(ToMicros(result.total_time)));
  item("ranks", std::to_string(result.world_size));
  item("ops simulated", std::to_string(result.simulated_ops));
  item("network model", context.fidelity);
  for (const auto& [key, value] : context.extra) {
    if (!value.empty() && value.front() == '{') continue;  // objects stay in the JSON report
    const bool quoted = value.size() >= 2 && value.front() == '"' && value.back() == '"';
    item(key, quoted ? value.substr(1, value.size() - 2) : value);
  }
  out += "</dl>\n";
  FamilyColours colours;
  out += Breakdown(result, colours);
  out += Timeline(result, colours);
  out += Communication(result, colours, context.fidelity == "flow");
  out += Memory(result, context);
  out += Coverage(result);
  out += Links(result);
  for (const std::string& note : context.notes)
    out += "<p class=\"note\">note: " + EscapeHtml(note) + "</p>\n";
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace myriad::emulator
