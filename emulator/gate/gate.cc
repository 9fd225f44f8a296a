// Report flattening, thresholds and comparison for `myriad gate` (myriad/emulator/gate.h).
#include "myriad/emulator/gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "myriad/glob.h"
#include "scenario/toml_reader.h"

namespace myriad::emulator {
namespace {

using Json = nlohmann::json;

std::string Scalar(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  return v.dump();
}

// nvcc names an anonymous namespace `_GLOBAL__N__<hash>_<file>...` with a hash of the build
// path, so the same kernel has another name in another checkout: drop the hash.
std::string Canonical(std::string name) {
  static constexpr std::string_view kAnonymous = "_GLOBAL__N__";
  for (size_t at = name.find(kAnonymous); at != std::string::npos;
       at = name.find(kAnonymous, at + kAnonymous.size())) {
    const size_t start = at + kAnonymous.size();
    size_t end = start;
    while (end < name.size() && std::isxdigit(static_cast<unsigned char>(name[end]))) ++end;
    name.erase(start, end - start);
  }
  return name;
}

// How an element of an array is named: by the keys that identify it, else its index.
std::string ElementKey(const Json& element, size_t index) {
  if (element.is_object()) {
    static const std::vector<std::vector<const char*>> kKeys = {{"comm", "op", "bytes"},
                                                                {"op", "size_bytes"},
                                                                {"rank"},
                                                                {"provider"},
                                                                {"name"},
                                                                {"family"}};
    for (const auto& keys : kKeys) {
      bool all = true;
      for (const char* k : keys) all = all && element.contains(k);
      if (!all) continue;
      std::string key;
      for (const char* k : keys) key += (key.empty() ? "" : " ") + Scalar(element[k]);
      return Canonical(key);
    }
  }
  return std::to_string(index);
}

void Flatten(const Json& v, const std::string& name, std::vector<Metric>* out) {
  if (v.is_number()) {
    out->push_back({name, v.get<double>()});
  } else if (v.is_object()) {
    for (const auto& [key, child] : v.items())
      Flatten(child, name.empty() ? key : name + "." + key, out);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i)
      Flatten(v[i], name + "[" + ElementKey(v[i], i) + "]", out);
  }
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string Unit(const std::string& metric) {
  if (EndsWith(metric, "_us")) return "us";
  if (EndsWith(metric, "_bytes") || metric.find("_bytes.") != std::string::npos) return "bytes";
  if (EndsWith(metric, "_gbps")) return "GB/s";
  if (EndsWith(metric, "tokens_per_second")) return "tokens/s";
  if (EndsWith(metric, "tflops_per_gpu")) return "TFLOP/s";
  if (metric.find("_us.") != std::string::npos || metric.find("_us_") != std::string::npos)
    return "us";
  return "";
}

std::string Number(std::optional<double> v) {
  if (!v) return "-";
  const double a = std::fabs(*v);
  if (a != 0 && (a >= 1e7 || a < 1e-3)) return fmt::format("{:.6g}", *v);
  return fmt::format("{:.3f}", *v);
}

// The figures a report is about: a current report that lacks one the baseline has fails.
bool IsHeadline(const std::string& metric) {
  for (const char* headline :
       {"iteration_time_us", "total_time_us", "tokens_per_second", "model_tflops_per_gpu", "mfu"})
    if (metric == headline) return true;
  return false;
}

// Myriad's reports nest a few levels; a document nested deeper is not one, and parsing and
// flattening it recursively could exhaust the stack (100,000 levels did).
constexpr int kMaxReportDepth = 64;
// The report format's version (docs/report-schema.md): the one Myriad writes and reads.
constexpr int kReportSchemaVersion = 1;

// The deepest nesting of arrays and objects in `json`, outside strings (stops past `limit`).
int NestingDepth(const std::string& json, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : json) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

Result<FlatReport> FlattenReport(const std::string& json, const std::string& path) {
  if (NestingDepth(json, kMaxReportDepth) > kMaxReportDepth)
    return Status::InvalidArgument(
        fmt::format("{}: not a JSON report: nested deeper than {} levels (docs/report-schema.md)",
                    path, kMaxReportDepth));
  Json doc = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return Status::InvalidArgument(path + ": not a JSON report (docs/report-schema.md)");
  if (!doc.is_object() && !doc.is_array())
    return Status::InvalidArgument(path + ": not a JSON report (an object or an array)");
  FlatReport report;
  if (doc.is_object() && doc.contains("schema_version") &&
      doc["schema_version"] != kReportSchemaVersion)
    return Status::InvalidArgument(fmt::format(
        "{}: report schema_version {} is not one this Myriad reads ({}; docs/report-schema.md)",
        path, doc["schema_version"].dump(), kReportSchemaVersion));
  if (doc.is_object()) {
    if (doc.contains("scenario") && doc["scenario"].is_object() && doc["scenario"].contains("name"))
      report.scenario = Scalar(doc["scenario"]["name"]);
    if (doc.contains("command")) report.command = Scalar(doc["command"]);
  } else {
    // `myriad collective --json`: rows naming their scenario file.
    report.command = "collective";
    if (!doc.empty() && doc[0].is_object() && doc[0].contains("scenario"))
      report.scenario = Scalar(doc[0]["scenario"]);
  }
  Flatten(doc, "", &report.metrics);
  if (report.metrics.empty()) return Status::InvalidArgument(path + ": no numeric metrics");
  return report;
}

Better DefaultDirection(const std::string& metric) {
  for (const char* higher :
       {"tokens_per_second", "model_tflops_per_gpu", "mfu", "busbw_gbps", "algbw_gbps"})
    if (EndsWith(metric, higher)) return Better::kHigher;
  return Better::kLower;
}

const std::vector<std::string>& DefaultMetricPatterns() {
  static const std::vector<std::string> kPatterns = {
      "iteration_time_us",
      "total_time_us",
      "tokens_per_second",
      "model_tflops_per_gpu",
      "mfu",
      "pipeline_bubble_fraction",
      "breakdown_us.exposed_comm.*",
      "breakdown_us.idle.max",
      "exposed_comm_us_per_iteration.*",
      "peak_memory_bytes.max",
      "memory_per_gpu_bytes.total",
      "ranks[*].peak_memory_bytes",
      "ranks[*].end_time_us",
      "collectives[*].time_us",
      "[*].time_us",
      "[*].busbw_gbps",
  };
  return kPatterns;
}

Result<double> ParseFraction(const std::string& text) {
  std::string s = text;
  bool percent = false;
  if (!s.empty() && s.back() == '%') {
    percent = true;
    s.pop_back();
  }
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < 0)
    return Status::InvalidArgument("'" + text + "' is not a threshold (such as 2% or 0.02)");
  return percent ? v / 100 : v;
}

Status LoadThresholds(const std::string& path, GateOptions* options) {
  Result<TomlNode> doc = ReadTomlFile(path);
  if (!doc.ok()) return doc.status();
  Result<TableReader> root = TableReader::Open(*doc, "", {"max_regression", "metric"});
  if (!root.ok()) return root.status();
  auto fraction = [](const TableReader& r, std::string_view key,
                     std::optional<double>* out) -> Status {
    Field<std::string> field;
    MYRIAD_RETURN_IF_ERROR(r.String(key, &field));
    if (!field.present) return Status::Ok();
    Result<double> v = ParseFraction(field.value);
    if (!v.ok()) return field.Error(v.status().message());
    *out = *v;
    return Status::Ok();
  };
  std::optional<double> top;
  MYRIAD_RETURN_IF_ERROR(fraction(*root, "max_regression", &top));
  if (top) options->max_regression = *top;
  const TomlNode* metrics = nullptr;
  MYRIAD_RETURN_IF_ERROR(root->Table("metric", &metrics));
  if (metrics == nullptr) return Status::Ok();
  for (const TomlNode::Entry& entry : metrics->entries) {
    if (entry.value.type != TomlNode::Type::kTable)
      return ErrorAt(entry.key_pos, "metric." + entry.key,
                     "expected a table (max_regression, better)");
    Result<TableReader> r =
        TableReader::Open(entry.value, "metric." + entry.key, {"max_regression", "better"});
    if (!r.ok()) return r.status();
    MetricRule rule;
    rule.pattern = entry.key;
    MYRIAD_RETURN_IF_ERROR(fraction(*r, "max_regression", &rule.max_regression));
    Field<std::string> better;
    MYRIAD_RETURN_IF_ERROR(r->String("better", &better));
    if (better.present) {
      Better parsed = Better::kLower;
      MYRIAD_RETURN_IF_ERROR(
          ParseChoice(better, {{"higher", Better::kHigher}, {"lower", Better::kLower}}, &parsed));
      rule.better = parsed;
    }
    options->rules.push_back(rule);
  }
  return Status::Ok();
}

Result<GateResult> Compare(const FlatReport& baseline, const FlatReport& current,
                           const GateOptions& options) {
  if (!options.allow_different_scenario &&
      (baseline.scenario != current.scenario || baseline.command != current.command))
    return Status::InvalidArgument(fmt::format(
        "the reports are of different runs (baseline: {} of '{}', current: {} of '{}'); "
        "--allow-different-scenario compares them anyway",
        baseline.command, baseline.scenario, current.command, current.scenario));
  const std::vector<std::string>& patterns =
      options.metrics.empty() ? DefaultMetricPatterns() : options.metrics;
  auto selected = [&](const std::string& name) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [&](const std::string& p) { return GlobMatch(p, name); });
  };
  // Metrics by name, in the baseline's order, then the current report's new ones.
  std::map<std::string, size_t> index;
  GateResult result;
  auto row_of = [&](const std::string& name) -> Comparison& {
    auto [it, inserted] = index.emplace(name, result.rows.size());
    if (inserted) {
      result.rows.emplace_back();
      result.rows.back().metric = name;
    }
    return result.rows[it->second];
  };
  for (const Metric& m : baseline.metrics)
    if (selected(m.name)) row_of(m.name).baseline = m.value;
  for (const Metric& m : current.metrics)
    if (selected(m.name)) row_of(m.name).current = m.value;
  const auto matches_a_row = [&](const std::string& p) {
    return std::any_of(result.rows.begin(), result.rows.end(),
                       [&](const Comparison& c) { return GlobMatch(p, c.metric); });
  };
  if (!options.metrics.empty())
    for (const std::string& p : options.metrics)
      if (!matches_a_row(p))
        return Status::InvalidArgument("no metric matches '" + p + "' in either report");
  // A --threshold that applies to nothing is a typo, as a --metric that matches nothing is.
  const auto in_either = [&](const std::string& p) {
    for (const FlatReport* report : {&baseline, &current})
      for (const Metric& m : report->metrics)
        if (GlobMatch(p, m.name)) return true;
    return false;
  };
  for (const MetricRule& rule : options.rules)
    if (rule.must_match && !in_either(rule.pattern))
      return Status::InvalidArgument("--threshold " + rule.pattern +
                                     "=...: no metric matches it in either report");
  for (Comparison& c : result.rows) {
    c.better = DefaultDirection(c.metric);
    c.threshold = options.max_change.value_or(options.max_regression);
    for (const MetricRule& rule : options.rules)
      if (GlobMatch(rule.pattern, c.metric)) {
        if (rule.max_regression) c.threshold = *rule.max_regression;
        if (rule.better) c.better = *rule.better;
      }
    if (!c.baseline) {
      c.verdict = Comparison::kNew;
      if (options.max_change) result.failed = true;
      continue;
    }
    if (!c.current) {
      c.verdict = Comparison::kMissing;
      // A headline figure the baseline has and the current report lacks (or holds as null, a
      // string, a bool) is a failed run, not a pass.
      if (options.max_change || IsHeadline(c.metric)) result.failed = true;
      continue;
    }
    ++result.compared;
    const double base = *c.baseline, cur = *c.current;
    c.change = base == cur ? 0.0
               : base != 0 ? (cur - base) / std::fabs(base)
                           : (cur > 0 ? INFINITY : -INFINITY);
    // Positive: worse.
    const double worse = c.better == Better::kLower ? c.change : -c.change;
    constexpr double kEpsilon = 1e-12;
    if (std::fabs(c.change) <= kEpsilon) {
      c.verdict = Comparison::kSame;
    } else if (options.max_change) {
      c.verdict = std::fabs(c.change) > c.threshold + kEpsilon
                      ? Comparison::kChanged
                      : (worse > 0 ? Comparison::kWorse : Comparison::kBetter);
    } else if (worse > c.threshold + kEpsilon) {
      c.verdict = Comparison::kRegressed;
    } else {
      c.verdict = worse > 0 ? Comparison::kWorse : Comparison::kBetter;
    }
    if (c.verdict == Comparison::kRegressed || c.verdict == Comparison::kChanged)
      result.failed = true;
  }
  return result;
}

std::string VerdictName(Comparison::Verdict verdict) {
  switch (verdict) {
    case Comparison::kSame:
      return "same";
    case Comparison::kBetter:
      return "better";
    case Comparison::kWorse:
      return "worse (within threshold)";
    case Comparison::kRegressed:
      return "REGRESSED";
    case Comparison::kChanged:
      return "CHANGED";
    case Comparison::kMissing:
      return "missing in current";
    case Comparison::kNew:
      return "new in current";
  }
  return "?";
}

namespace {

std::string Change(const Comparison& c) {
  if (!c.baseline || !c.current) return "-";
  if (std::isinf(c.change)) return c.change > 0 ? "+inf" : "-inf";
  return fmt::format("{:+.2f}%", 100 * c.change);
}

}  // namespace

std::string FormatGateTable(const GateResult& result, int max_same) {
  size_t width = 6;
  for (const Comparison& c : result.rows) width = std::max(width, c.metric.size());
  width = std::min<size_t>(width, 60);
  std::string out = fmt::format("{:<{}}  {:>14}  {:>14}  {:>9}  {}\n", "metric", width, "baseline",
                                "current", "change", "verdict");
  // What changed first, then the unchanged rows (the first `max_same` of them).
  std::vector<const Comparison*> order;
  for (const Comparison& c : result.rows)
    if (c.verdict != Comparison::kSame) order.push_back(&c);
  for (const Comparison& c : result.rows)
    if (c.verdict == Comparison::kSame) order.push_back(&c);
  int same = 0, hidden = 0;
  for (const Comparison* row : order) {
    const Comparison& c = *row;
    if (c.verdict == Comparison::kSame && ++same > max_same) {
      ++hidden;
      continue;
    }
    out +=
        fmt::format("{:<{}}  {:>14}  {:>14}  {:>9}  {} ({} better, limit {:.2f}%)\n", c.metric,
                    width, Number(c.baseline), Number(c.current), Change(c), VerdictName(c.verdict),
                    c.better == Better::kLower ? "lower" : "higher", 100 * c.threshold);
  }
  if (hidden > 0) out += fmt::format("... and {} more metrics unchanged\n", hidden);
  out += fmt::format("{}: {} metrics compared\n", result.failed ? "FAILED" : "passed",
                     result.compared);
  return out;
}

std::string FormatGateMarkdown(const GateResult& result, const std::string& title) {
  int regressed = 0;
  for (const Comparison& c : result.rows)
    regressed += c.verdict == Comparison::kRegressed || c.verdict == Comparison::kChanged;
  std::string out =
      fmt::format("### {} {}\n\n", result.failed ? ":x:" : ":white_check_mark:", title);
  out += fmt::format("{} metrics compared, {} beyond their threshold.\n\n", result.compared,
                     regressed);
  out += "| metric | baseline | current | change | verdict |\n|---|---:|---:|---:|---|\n";
  for (const Comparison& c : result.rows) {
    if (c.verdict == Comparison::kSame) continue;
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", c.metric, Number(c.baseline),
                       Number(c.current), Change(c), VerdictName(c.verdict));
  }
  if (regressed == 0 && std::all_of(result.rows.begin(), result.rows.end(),
                                    [](const auto& c) { return c.verdict == Comparison::kSame; }))
    out += "| (every metric unchanged) | | | | |\n";
  return out;
}

std::string BenchmarkActionJson(const GateResult& result) {
  std::string out = "[";
  bool first = true;
  for (const Comparison& c : result.rows) {
    if (!c.current || c.better != Better::kLower) continue;
    out += fmt::format("{}\n  {{\"name\": {}, \"unit\": {}, \"value\": {}}}", first ? "" : ",",
                       Json(c.metric).dump(), Json(Unit(c.metric)).dump(), Json(*c.current).dump());
    first = false;
  }
  out += first ? "]\n" : "\n]\n";
  return out;
}

std::string GateJson(const GateResult& result, const std::string& baseline_name,
                     const std::string& current_name) {
  nlohmann::ordered_json doc;
  doc["baseline"] = baseline_name;
  doc["current"] = current_name;
  doc["failed"] = result.failed;
  doc["compared"] = result.compared;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Comparison& c : result.rows) {
    nlohmann::ordered_json row;
    row["metric"] = c.metric;
    row["baseline"] = c.baseline ? nlohmann::ordered_json(*c.baseline) : nullptr;
    row["current"] = c.current ? nlohmann::ordered_json(*c.current) : nullptr;
    row["change"] = c.change;
    row["better"] = c.better == Better::kLower ? "lower" : "higher";
    row["threshold"] = c.threshold;
    row["verdict"] = VerdictName(c.verdict);
    rows.push_back(std::move(row));
  }
  doc["rows"] = std::move(rows);
  return doc.dump(2) + "\n";
}

}  // namespace myriad::emulator
