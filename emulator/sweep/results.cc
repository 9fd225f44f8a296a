// A sweep's points and their results: the plan and result files a run leaves (so it resumes,
// and Slurm's tasks can be merged), each point's outcome, and the tables and page of results.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "myriad/emulator/sweep.h"
#include "myriad/html_escape.h"

namespace myriad::emulator {
namespace {

using Json = nlohmann::ordered_json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The report's numbers that describe the whole run, flattened with dots
// ("memory_per_gpu_bytes.total"); per-rank, per-kernel and per-collective lists are left out.
void Flatten(const nlohmann::json& node, const std::string& prefix,
             std::map<std::string, double>* out) {
  if (node.is_number()) {
    (*out)[prefix] = node.get<double>();
  } else if (node.is_object()) {
    for (const auto& [key, value] : node.items())
      Flatten(value, prefix.empty() ? key : prefix + "." + key, out);
  }
}

// The line of a failed run's stderr that says why: its first "myriad: error:" line, else its
// last non-empty line.
std::string WhyFrom(const std::string& stderr_text) {
  std::string last;
  std::size_t start = 0;
  while (start < stderr_text.size()) {
    std::size_t end = stderr_text.find('\n', start);
    if (end == std::string::npos) end = stderr_text.size();
    std::string line = stderr_text.substr(start, end - start);
    if (line.rfind("myriad: error: ", 0) == 0) return line.substr(15);
    if (!line.empty()) last = line;
    start = end + 1;
  }
  return last.empty() ? "no message" : last;
}

Json ValueJson(const SweepValue& v) {
  switch (v.kind) {
    case SweepValue::Kind::kInteger:
      return static_cast<std::int64_t>(v.number);
    case SweepValue::Kind::kFloat:
      return v.number;
    case SweepValue::Kind::kBoolean:
      return v.number != 0;
    case SweepValue::Kind::kString:
      return v.text;
  }
  return nullptr;
}

std::optional<SweepValue> ValueFromJson(const nlohmann::json& j) {
  if (j.is_boolean()) return SweepValue{SweepValue::Kind::kBoolean, j.get<bool>() ? 1.0 : 0.0, {}};
  if (j.is_number_integer())
    return SweepValue{SweepValue::Kind::kInteger, static_cast<double>(j.get<std::int64_t>()), {}};
  if (j.is_number()) return SweepValue{SweepValue::Kind::kFloat, j.get<double>(), {}};
  if (j.is_string()) return SweepValue{SweepValue::Kind::kString, 0, j.get<std::string>()};
  return std::nullopt;
}

Json SettingsJson(const SweepPoint& p) {
  Json settings = Json::object();
  for (const auto& [key, value] : p.settings) settings[key] = ValueJson(value);
  return settings;
}

std::optional<PointStatus> StatusFrom(const std::string& name) {
  for (PointStatus s : {PointStatus::kPending, PointStatus::kOk, PointStatus::kExcluded,
                        PointStatus::kImpossible, PointStatus::kOutOfMemory, PointStatus::kFailed})
    if (ToString(s) == name) return s;
  return std::nullopt;
}

Json PointJson(const SweepPoint& p) {
  Json j;
  j["index"] = p.index;
  j["settings"] = SettingsJson(p);
  j["status"] = std::string(ToString(p.status));
  if (!p.reason.empty()) j["reason"] = p.reason;
  if (p.gpus > 0) j["gpus"] = p.gpus;
  if (p.hbm_bytes > 0) j["hbm_bytes"] = p.hbm_bytes;
  if (p.planned_memory_bytes > 0) j["planned_memory_bytes"] = p.planned_memory_bytes;
  if (!p.metrics.empty()) {
    Json metrics = Json::object();
    for (const auto& [key, value] : p.metrics) metrics[key] = value;
    j["metrics"] = std::move(metrics);
  }
  return j;
}

// A number as the tables show it: up to 4 significant decimals, no exponent for the sizes
// a training run has.
std::string Figure(double v) {
  if (std::fabs(v) >= 1e4 || v == std::floor(v)) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

// The columns every table shows after the settings.
const std::vector<std::pair<std::string, std::string>>& Columns() {
  static const std::vector<std::pair<std::string, std::string>> kColumns = {
      {"gpus", "GPUs"},
      {"tokens_per_second", "tokens/s"},
      {"iteration_time_us", "iteration (us)"},
      {"model_tflops_per_gpu", "TFLOP/s per GPU"},
      {"mfu", "MFU"},
      {"planned_memory_bytes", "memory per GPU (GiB)"}};
  return kColumns;
}

std::optional<double> Column(const SweepPoint& p, const std::string& key) {
  if (key == "gpus") return p.gpus > 0 ? std::optional<double>(p.gpus) : std::nullopt;
  if (key == "planned_memory_bytes")
    return p.planned_memory_bytes > 0 ? std::optional<double>(p.planned_memory_bytes / kGiB)
                                      : std::nullopt;
  const auto it = p.metrics.find(key);
  if (it == p.metrics.end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::string SettingsText(const SweepPoint& point) {
  std::string s;
  for (const auto& [key, value] : point.settings)
    s += (s.empty() ? "" : ", ") + key.substr(key.rfind('.') + 1) + "=" + value.Display();
  return s;
}

void ClassifyPointRun(int exit_status, const std::string& stderr_text,
                      const std::string& report_json, SweepPoint* point) {
  point->metrics.clear();
  point->reason.clear();
  if (exit_status == 0) {
    const nlohmann::json report = nlohmann::json::parse(report_json, nullptr, false);
    if (report.is_discarded() || !report.is_object()) {
      point->status = PointStatus::kFailed;
      point->reason = "its run succeeded but left no readable report";
      return;
    }
    Flatten(report, "", &point->metrics);
    point->status = PointStatus::kOk;
    return;
  }
  point->reason = WhyFrom(stderr_text);
  // `myriad simulate` exits 2 for input it rejects (the point's scenario or layout cannot be)
  // and 1 when the run fails; a predicted out-of-memory is such a failure, and names itself.
  if (exit_status == 2) {
    point->status = PointStatus::kImpossible;
  } else if (exit_status == 1 &&
             point->reason.find("predicted out of memory") != std::string::npos) {
    point->status = PointStatus::kOutOfMemory;
  } else {
    point->status = PointStatus::kFailed;
    point->reason = fmt::format("exit status {}: {}", exit_status, point->reason);
  }
}

std::string PlanJson(const SweepPlan& plan) {
  Json j;
  j["sweep"] = plan.sweep_path;
  j["base"] = plan.base_path;
  j["base_name"] = plan.base_name;
  j["objective"] = {{"metric", plan.objective.metric},
                    {"goal", plan.objective.maximize ? "max" : "min"}};
  j["axes"] = plan.axes;
  j["constraints"] = plan.constraints;
  Json points = Json::array();
  for (const SweepPoint& p : plan.points) {
    Json point;
    point["index"] = p.index;
    point["settings"] = SettingsJson(p);
    if (p.status == PointStatus::kExcluded || p.status == PointStatus::kImpossible) {
      point["status"] = std::string(ToString(p.status));
      point["reason"] = p.reason;
    }
    if (p.gpus > 0) point["gpus"] = p.gpus;
    if (p.hbm_bytes > 0) point["hbm_bytes"] = p.hbm_bytes;
    if (p.planned_memory_bytes > 0) point["planned_memory_bytes"] = p.planned_memory_bytes;
    points.push_back(std::move(point));
  }
  j["points"] = std::move(points);
  return j.dump(2) + "\n";
}

Result<SweepPlan> ParsePlanJson(const std::string& json, const std::string& path) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument(path + ": not a sweep plan (" + what + ")");
  };
  if (j.is_discarded() || !j.is_object()) return bad("not JSON");
  SweepPlan plan;
  try {
    plan.sweep_path = j.at("sweep").get<std::string>();
    plan.base_path = j.at("base").get<std::string>();
    plan.base_name = j.at("base_name").get<std::string>();
    plan.objective.metric = j.at("objective").at("metric").get<std::string>();
    plan.objective.maximize = j.at("objective").at("goal").get<std::string>() == "max";
    plan.axes = j.at("axes").get<std::vector<std::string>>();
    plan.constraints = j.at("constraints").get<std::vector<std::string>>();
    for (const nlohmann::json& p : j.at("points")) {
      SweepPoint point;
      point.index = p.at("index").get<int>();
      if (point.index != static_cast<int>(plan.points.size())) return bad("points out of order");
      for (const std::string& key : plan.axes) {
        std::optional<SweepValue> v = ValueFromJson(p.at("settings").at(key));
        if (!v) return bad("a setting of point " + std::to_string(point.index));
        point.settings.emplace_back(key, *v);
      }
      if (p.contains("status")) {
        std::optional<PointStatus> status = StatusFrom(p.at("status").get<std::string>());
        if (!status) return bad("a status of point " + std::to_string(point.index));
        point.status = *status;
        point.reason = p.value("reason", "");
      }
      point.gpus = p.value("gpus", 0);
      point.hbm_bytes = p.value("hbm_bytes", 0.0);
      point.planned_memory_bytes = p.value("planned_memory_bytes", 0.0);
      plan.points.push_back(std::move(point));
    }
  } catch (const nlohmann::json::exception& e) {
    return bad(e.what());
  }
  return plan;
}

std::string PointResultJson(const SweepPoint& point) { return PointJson(point).dump(2) + "\n"; }

bool ReadPointResult(const std::string& json, SweepPoint* point) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("settings") || !j.contains("status"))
    return false;
  // A result of other settings (the sweep file changed since) does not count.
  if (nlohmann::json(SettingsJson(*point)) != j["settings"]) return false;
  std::optional<PointStatus> status =
      j["status"].is_string() ? StatusFrom(j["status"].get<std::string>()) : std::nullopt;
  if (!status || *status == PointStatus::kPending) return false;
  point->status = *status;
  point->reason = j.value("reason", "");
  point->metrics.clear();
  if (j.contains("metrics") && j["metrics"].is_object())
    for (const auto& [key, value] : j["metrics"].items())
      if (value.is_number()) point->metrics[key] = value.get<double>();
  return true;
}

std::optional<int> BestPoint(const SweepPlan& plan) {
  std::optional<int> best;
  double best_value = 0;
  for (const SweepPoint& p : plan.points) {
    if (p.status != PointStatus::kOk) continue;
    const auto it = p.metrics.find(plan.objective.metric);
    if (it == p.metrics.end()) continue;
    // Ties go to the earlier point, so the answer does not depend on the order points ran in.
    const bool better = plan.objective.maximize ? it->second > best_value : it->second < best_value;
    if (!best || better) {
      best = p.index;
      best_value = it->second;
    }
  }
  return best;
}

std::string SweepResultsJson(const SweepPlan& plan) {
  Json j;
  j["sweep"] = plan.sweep_path;
  j["base"] = plan.base_path;
  j["objective"] = {{"metric", plan.objective.metric},
                    {"goal", plan.objective.maximize ? "max" : "min"}};
  j["axes"] = plan.axes;
  Json counts = Json::object();
  for (PointStatus s : {PointStatus::kOk, PointStatus::kImpossible, PointStatus::kOutOfMemory,
                        PointStatus::kExcluded, PointStatus::kFailed, PointStatus::kPending}) {
    counts[std::string(ToString(s))] = std::count_if(
        plan.points.begin(), plan.points.end(), [s](const SweepPoint& p) { return p.status == s; });
  }
  j["counts"] = std::move(counts);
  Json points = Json::array();
  for (const SweepPoint& p : plan.points) {
    Json point = PointJson(p);
    if (p.status == PointStatus::kOk) point["report"] = PointFolder(p.index) + "/report.json";
    points.push_back(std::move(point));
  }
  j["points"] = std::move(points);
  if (const std::optional<int> best = BestPoint(plan)) {
    const SweepPoint& p = plan.points[static_cast<std::size_t>(*best)];
    j["best"] = {{"index", p.index},
                 {"settings", SettingsJson(p)},
                 {plan.objective.metric, p.metrics.at(plan.objective.metric)}};
  } else {
    j["best"] = nullptr;
  }
  return j.dump(2) + "\n";
}

std::string SweepResultsCsv(const SweepPlan& plan) {
  auto quoted = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  };
  std::string out = "index";
  for (const std::string& key : plan.axes) out += "," + quoted(key);
  out += ",status";
  for (const auto& [key, label] : Columns()) out += "," + key;
  out += ",reason\n";
  for (const SweepPoint& p : plan.points) {
    out += std::to_string(p.index);
    for (const auto& [key, value] : p.settings) out += "," + quoted(value.Display());
    out += "," + std::string(ToString(p.status));
    for (const auto& [key, label] : Columns()) {
      // Raw figures here (bytes, not GiB): the file is for programs.
      std::optional<double> v = Column(p, key);
      if (v && key == "planned_memory_bytes") v = p.planned_memory_bytes;
      out += "," + (v ? fmt::format("{}", *v) : std::string());
    }
    out += "," + quoted(p.reason) + "\n";
  }
  return out;
}

std::string SweepResultsMarkdown(const SweepPlan& plan) {
  const std::optional<int> best = BestPoint(plan);
  std::string out = fmt::format("# Sweep {} (base {})\n\n", plan.sweep_path, plan.base_path);
  out += fmt::format("Objective: {} {}. ", plan.objective.maximize ? "highest" : "lowest",
                     plan.objective.metric);
  if (best) {
    const SweepPoint& p = plan.points[static_cast<std::size_t>(*best)];
    out += fmt::format("Best: point {} ({}), {} = {}.\n\n", p.index, SettingsText(p),
                       plan.objective.metric, Figure(p.metrics.at(plan.objective.metric)));
  } else {
    out += "No point ran to completion.\n\n";
  }
  out += "| point |";
  for (const std::string& key : plan.axes) out += " " + key + " |";
  out += " status |";
  for (const auto& [key, label] : Columns()) out += " " + label + " |";
  out += " note |\n|---|";
  for (std::size_t i = 0; i < plan.axes.size() + 1 + Columns().size() + 1; ++i) out += "---|";
  out += "\n";
  for (const SweepPoint& p : plan.points) {
    out += fmt::format("| {}{} |", p.index, best && *best == p.index ? " (best)" : "");
    for (const auto& [key, value] : p.settings) out += " " + value.Display() + " |";
    out += " " + std::string(ToString(p.status)) + " |";
    for (const auto& [key, label] : Columns()) {
      const std::optional<double> v = Column(p, key);
      out += " " + (v ? Figure(*v) : std::string()) + " |";
    }
    std::string note = p.reason;
    std::replace(note.begin(), note.end(), '|', '/');
    out += " " + note + " |\n";
  }
  return out;
}

std::string SweepResultsHtml(const SweepPlan& plan) {
  const std::optional<int> best = BestPoint(plan);
  // Bars, one per point in grid order: the objective (ok points), and memory per GPU against
  // the HBM line (every point whose plan is known). Plain inline SVG: the page fetches nothing.
  constexpr double kWidth = 900, kHeight = 260, kLeft = 70, kBottom = 40, kTop = 20;
  const double n = static_cast<double>(std::max<std::size_t>(plan.points.size(), 1));
  const double slot = (kWidth - kLeft - 10) / n;
  auto chart = [&](const std::string& title, auto value_of, double line,
                   const std::string& line_label, const std::string& unit) {
    double top = line;
    for (const SweepPoint& p : plan.points)
      if (const std::optional<double> v = value_of(p)) top = std::max(top, *v);
    if (top <= 0) top = 1;
    std::string svg = fmt::format(
        "<h2>{}</h2>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
        "role=\"img\" aria-label=\"{}\">\n",
        EscapeHtml(title), kWidth, kHeight, EscapeHtml(title));
    const double plot_h = kHeight - kBottom - kTop;
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#444\"/>\n"
        "<text x=\"{3:.1f}\" y=\"{1:.1f}\" font-size=\"11\" text-anchor=\"end\">{4}</text>\n"
        "<text x=\"{3:.1f}\" y=\"{2:.1f}\" font-size=\"11\" text-anchor=\"end\">0</text>\n",
        kLeft, kTop, kTop + plot_h, kLeft - 4, EscapeHtml(Figure(top) + " " + unit));
    for (const SweepPoint& p : plan.points) {
      const double x = kLeft + 2 + slot * p.index;
      const std::optional<double> v = value_of(p);
      if (v) {
        const double h = plot_h * *v / top;
        const bool is_best = best && *best == p.index;
        svg += fmt::format(
            "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
            "fill=\"{}\"><title>point {} ({}): {} {}</title></rect>\n",
            x, kTop + plot_h - h, std::max(1.0, slot * 0.8), h, is_best ? "#d95f02" : "#1b9e77",
            p.index, EscapeHtml(SettingsText(p)), EscapeHtml(Figure(*v)), EscapeHtml(unit));
      } else {
        svg += fmt::format(
            "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\" fill=\"#999\">x<title>point {}: "
            "{}</title></text>\n",
            x, kTop + plot_h - 2, p.index, EscapeHtml(std::string(ToString(p.status))));
      }
      if (plan.points.size() <= 64)
        svg += fmt::format(
            "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\" text-anchor=\"middle\">{}</text>\n",
            x + slot * 0.4, kHeight - kBottom + 12, p.index);
    }
    if (line > 0) {
      const double y = kTop + plot_h - plot_h * line / top;
      svg += fmt::format(
          "<line class=\"limit\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
          "stroke=\"#c00\" stroke-dasharray=\"4 3\"/>\n<text x=\"{:.1f}\" y=\"{:.1f}\" "
          "font-size=\"11\" fill=\"#c00\">{}</text>\n",
          kLeft, y, kWidth - 10, y, kWidth - 160, y - 4, EscapeHtml(line_label));
    }
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"middle\">point</text>\n"
        "</svg>\n",
        kLeft + (kWidth - kLeft) / 2, kHeight - 6);
    return svg;
  };
  double hbm = 0;
  for (const SweepPoint& p : plan.points) hbm = std::max(hbm, p.hbm_bytes / kGiB);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Myriad "
      "sweep " +
      EscapeHtml(plan.sweep_path) +
      "</title>\n<style>\nbody{font-family:sans-serif;margin:2em;color:#222}\n"
      "table{border-collapse:collapse;font-size:13px}\n"
      "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}\n"
      "tr.best{background:#fde9d9}\ntd.note{text-align:left;color:#666}\n</style>\n</head>\n"
      "<body>\n";
  out += fmt::format("<h1>Sweep {}</h1>\n<p>Base scenario {}; objective: {} {}.</p>\n",
                     EscapeHtml(plan.sweep_path), EscapeHtml(plan.base_path),
                     plan.objective.maximize ? "highest" : "lowest",
                     EscapeHtml(plan.objective.metric));
  if (best) {
    const SweepPoint& p = plan.points[static_cast<std::size_t>(*best)];
    out += fmt::format("<p id=\"best\">Best: point {} ({}), {} = {}.</p>\n", p.index,
                       EscapeHtml(SettingsText(p)), EscapeHtml(plan.objective.metric),
                       EscapeHtml(Figure(p.metrics.at(plan.objective.metric))));
  } else {
    out += "<p id=\"best\">No point ran to completion.</p>\n";
  }
  const std::string metric = plan.objective.metric;
  out += chart(
      plan.objective.metric + " per point",
      [&](const SweepPoint& p) -> std::optional<double> {
        if (p.status != PointStatus::kOk || !p.metrics.count(metric)) return std::nullopt;
        return p.metrics.at(metric);
      },
      0, "", metric);
  out += chart(
      "memory per GPU (the plan's fullest stage) against HBM",
      [](const SweepPoint& p) -> std::optional<double> {
        if (p.planned_memory_bytes <= 0) return std::nullopt;
        return p.planned_memory_bytes / kGiB;
      },
      hbm, fmt::format("HBM {:.0f} GiB", hbm), "GiB");
  out += "<h2>Points</h2>\n<table>\n<tr><th>point</th>";
  for (const std::string& key : plan.axes) out += "<th>" + EscapeHtml(key) + "</th>";
  out += "<th>status</th>";
  for (const auto& [key, label] : Columns()) out += "<th>" + EscapeHtml(label) + "</th>";
  out += "<th>note</th></tr>\n";
  for (const SweepPoint& p : plan.points) {
    out += fmt::format("<tr{}><td>{}</td>", best && *best == p.index ? " class=\"best\"" : "",
                       p.index);
    for (const auto& [key, value] : p.settings)
      out += "<td>" + EscapeHtml(value.Display()) + "</td>";
    out += "<td>" + std::string(ToString(p.status)) + "</td>";
    for (const auto& [key, label] : Columns()) {
      const std::optional<double> v = Column(p, key);
      out += "<td>" + (v ? EscapeHtml(Figure(*v)) : std::string()) + "</td>";
    }
    out += "<td class=\"note\">" + EscapeHtml(p.reason) + "</td></tr>\n";
  }
  out += "</table>\n</body>\n</html>\n";
  return out;
}

}  // namespace myriad::emulator
