// Sweep files: read, checked and expanded into the grid of points (docs/sweep.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "myriad/emulator/sweep.h"
#include "scenario/toml_reader.h"

namespace myriad::emulator {
namespace fs = std::filesystem;
namespace {

// A grid beyond this is a mistake more often than a plan (and a Slurm array's default
// MaxArraySize is 1,001 tasks).
constexpr std::size_t kMaxPoints = 100000;

// One axis of the grid: one key of [axes], or the keys of one [[zip]] table, whose lists
// advance together.
struct Axis {
  std::vector<std::string> keys;
  std::vector<std::vector<SweepValue>> values;  // per key; all the same length
};

Result<SweepValue> ValueOf(const TomlNode& node, const std::string& key) {
  SweepValue v;
  switch (node.type) {
    case TomlNode::Type::kInteger:
      v.kind = SweepValue::Kind::kInteger;
      v.number = static_cast<double>(node.integer_value);
      return v;
    case TomlNode::Type::kFloat:
      if (!std::isfinite(node.float_value))
        return ErrorAt(node.pos, key, "values must be finite numbers");
      v.kind = SweepValue::Kind::kFloat;
      v.number = node.float_value;
      return v;
    case TomlNode::Type::kString:
      v.kind = SweepValue::Kind::kString;
      v.text = node.string_value;
      return v;
    case TomlNode::Type::kBoolean:
      v.kind = SweepValue::Kind::kBoolean;
      v.number = node.bool_value ? 1 : 0;
      return v;
    default:
      return ErrorAt(node.pos, key,
                     fmt::format("axis values must be numbers, strings or booleans, got {}",
                                 TypeName(node.type)));
  }
}

// A key of the scenario the sweep may vary: dotted words ("workload.parallel.tp").
Status CheckKey(const TomlNode::Entry& entry) {
  const std::string& key = entry.key;
  bool ok = !key.empty() && key.front() != '.' && key.back() != '.' &&
            key.find("..") == std::string::npos;
  for (char c : key)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
  if (!ok)
    return ErrorAt(entry.key_pos, key,
                   "an axis is a dotted scenario key such as \"workload.parallel.tp\"");
  if (key == "include" || key == "name" || key == "description")
    return ErrorAt(entry.key_pos, key, "the sweep sets this itself; it cannot be an axis");
  return Status::Ok();
}

Result<std::vector<SweepValue>> ListOf(const TomlNode::Entry& entry, const std::string& where) {
  if (entry.value.type != TomlNode::Type::kArray || entry.value.elements.empty())
    return ErrorAt(entry.value.pos, where + entry.key,
                   "must be a non-empty list of values, such as [1, 2, 4, 8]");
  std::vector<SweepValue> values;
  for (const TomlNode& element : entry.value.elements) {
    Result<SweepValue> v = ValueOf(element, where + entry.key);
    if (!v.ok()) return v.status();
    values.push_back(*v);
  }
  return values;
}

bool IsIdentity(const std::string& a, const std::string& b) {
  std::error_code e1, e2;
  return fs::weakly_canonical(a, e1) == fs::weakly_canonical(b, e2);
}

}  // namespace

std::string SweepValue::Toml() const {
  switch (kind) {
    case Kind::kInteger:
      return fmt::format("{}", static_cast<std::int64_t>(number));
    case Kind::kFloat: {
      // Shortest text that reads back as the same double; TOML needs a '.' or an exponent.
      std::string s = fmt::format("{}", number);
      if (s.find_first_of(".eE") == std::string::npos) s += ".0";
      return s;
    }
    case Kind::kBoolean:
      return number != 0 ? "true" : "false";
    case Kind::kString: {
      std::string out = "\"";
      for (char c : text) {
        if (c == '"' || c == '\\') {
          out += '\\';
          out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<int>(c));
        } else {
          out += c;
        }
      }
      return out + "\"";
    }
  }
  return "";
}

std::string SweepValue::Display() const { return kind == Kind::kString ? text : Toml(); }

std::string_view ToString(PointStatus status) {
  switch (status) {
    case PointStatus::kPending:
      return "pending";
    case PointStatus::kOk:
      return "ok";
    case PointStatus::kExcluded:
      return "excluded";
    case PointStatus::kImpossible:
      return "impossible";
    case PointStatus::kOutOfMemory:
      return "out_of_memory";
    case PointStatus::kFailed:
      return "failed";
  }
  return "?";
}

Result<SweepObjective> ParseSweepObjective(const std::string& text) {
  SweepObjective o;
  if (text.rfind("max:", 0) == 0 || text.rfind("min:", 0) == 0) {
    o.maximize = text[1] == 'a';
    o.metric = text.substr(4);
    if (o.metric.empty())
      return Status::InvalidArgument("objective '" + text + "' names no metric");
    return o;
  }
  o.metric = text;
  if (text == "tokens_per_second" || text == "mfu" || text == "model_tflops_per_gpu") {
    o.maximize = true;
  } else if (text == "iteration_time_us") {
    o.maximize = false;
  } else {
    return Status::InvalidArgument(
        "unknown objective '" + text +
        "' (tokens_per_second, mfu, model_tflops_per_gpu, iteration_time_us, or max:METRIC / "
        "min:METRIC)");
  }
  return o;
}

std::string PointFolder(int index) { return fmt::format("points/{:04d}", index); }

Result<SweepPlan> LoadSweep(const std::string& path) {
  Result<TomlNode> doc = ReadTomlFile(path);
  if (!doc.ok()) return doc.status();
  Result<TableReader> root =
      TableReader::Open(*doc, "", {"base", "objective", "axes", "zip", "constraints"});
  if (!root.ok()) return root.status();

  SweepPlan plan;
  plan.sweep_path = path;
  Field<std::string> base;
  MYRIAD_RETURN_IF_ERROR(root->String("base", &base));
  if (!base.present) return root->Missing("base", "the scenario the sweep varies");
  plan.base_path = (fs::path(path).parent_path() / base.value).lexically_normal().generic_string();
  if (IsIdentity(plan.base_path, path))
    return base.Error("the base scenario is the sweep file itself");
  Field<std::string> objective;
  MYRIAD_RETURN_IF_ERROR(root->String("objective", &objective));
  if (objective.present) {
    Result<SweepObjective> o = ParseSweepObjective(objective.value);
    if (!o.ok()) return objective.Error(o.status().message());
    plan.objective = *o;
  }

  std::vector<Axis> axes;
  auto add_key = [&](const TomlNode::Entry& entry) -> Status {
    MYRIAD_RETURN_IF_ERROR(CheckKey(entry));
    if (std::find(plan.axes.begin(), plan.axes.end(), entry.key) != plan.axes.end())
      return ErrorAt(entry.key_pos, entry.key, "is swept twice");
    plan.axes.push_back(entry.key);
    return Status::Ok();
  };
  const TomlNode* axes_table = nullptr;
  MYRIAD_RETURN_IF_ERROR(root->Table("axes", &axes_table));
  if (axes_table != nullptr) {
    for (const TomlNode::Entry& entry : axes_table->entries) {
      MYRIAD_RETURN_IF_ERROR(add_key(entry));
      Result<std::vector<SweepValue>> values = ListOf(entry, "axes.");
      if (!values.ok()) return values.status();
      axes.push_back({{entry.key}, {*values}});
    }
  }
  std::vector<const TomlNode*> zips;
  MYRIAD_RETURN_IF_ERROR(root->TableList("zip", &zips));
  for (const TomlNode* zip : zips) {
    Axis axis;
    for (const TomlNode::Entry& entry : zip->entries) {
      MYRIAD_RETURN_IF_ERROR(add_key(entry));
      Result<std::vector<SweepValue>> values = ListOf(entry, "zip.");
      if (!values.ok()) return values.status();
      if (!axis.values.empty() && values->size() != axis.values.front().size())
        return ErrorAt(entry.value.pos, "zip." + entry.key,
                       fmt::format("has {} values, but '{}' beside it has {}: the lists of one "
                                   "[[zip]] vary together",
                                   values->size(), axis.keys.front(), axis.values.front().size()));
      axis.keys.push_back(entry.key);
      axis.values.push_back(*values);
    }
    if (axis.keys.empty()) return ErrorAt(zip->pos, "zip", "an empty [[zip]] table");
    axes.push_back(std::move(axis));
  }
  if (axes.empty())
    return root->Missing("axes", "the keys to vary, e.g. \"workload.parallel.tp\" = [1, 2, 4]");

  std::vector<Field<std::string>> constraints;
  MYRIAD_RETURN_IF_ERROR(root->StringList("constraints", &constraints));
  for (const Field<std::string>& c : constraints) plan.constraints.push_back(c.value);

  // The grid, the last axis varying fastest.
  std::size_t total = 1;
  for (const Axis& axis : axes) {
    total *= axis.values.front().size();
    if (total > kMaxPoints)
      return root->Missing("axes",
                           fmt::format("at most {} points (this grid has more)", kMaxPoints));
  }
  for (std::size_t i = 0; i < total; ++i) {
    SweepPoint point;
    point.index = static_cast<int>(i);
    std::size_t rest = i;
    std::vector<std::size_t> choice(axes.size());
    for (std::size_t a = axes.size(); a-- > 0;) {
      const std::size_t n = axes[a].values.front().size();
      choice[a] = rest % n;
      rest /= n;
    }
    for (const std::string& key : plan.axes) {
      for (std::size_t a = 0; a < axes.size(); ++a) {
        const auto it = std::find(axes[a].keys.begin(), axes[a].keys.end(), key);
        if (it == axes[a].keys.end()) continue;
        const auto k = static_cast<std::size_t>(it - axes[a].keys.begin());
        point.settings.emplace_back(key, axes[a].values[k][choice[a]]);
      }
    }
    for (std::size_t c = 0; c < constraints.size(); ++c) {
      Result<bool> holds = EvaluateConstraint(constraints[c].value, point.settings);
      if (!holds.ok()) return constraints[c].Error(holds.status().message());
      if (!*holds) {
        point.status = PointStatus::kExcluded;
        point.reason = "constraint: " + constraints[c].value;
        break;
      }
    }
    plan.points.push_back(std::move(point));
  }
  return plan;
}

std::string PointScenarioToml(const SweepPlan& plan, const SweepPoint& point,
                              const std::string& point_dir) {
  // Relative, so the folder can move with the scenarios; absolute when the two share nothing
  // but the root (a sweep written to /tmp from a checkout).
  std::error_code error;
  const fs::path base = fs::absolute(plan.base_path, error).lexically_normal();
  const fs::path here = fs::absolute(point_dir, error).lexically_normal();
  fs::path include = fs::relative(base, here, error);
  const auto top = [](const fs::path& p) {
    auto it = p.begin();
    return it != p.end() && ++it != p.end() ? *it : fs::path();
  };
  if (error || include.empty() || top(base) != top(here)) include = base;
  std::string settings;
  for (const auto& [key, value] : point.settings)
    settings += (settings.empty() ? "" : ", ") + key + "=" + value.Display();
  std::string out = fmt::format(
      "# Point {} of the sweep {}: its base scenario with these settings over it.\n"
      "include = {}\n"
      "name = {}\n"
      "description = {}\n",
      point.index, plan.sweep_path,
      SweepValue{SweepValue::Kind::kString, 0, include.generic_string()}.Toml(),
      SweepValue{SweepValue::Kind::kString, 0, plan.base_name}.Toml(),
      SweepValue{SweepValue::Kind::kString, 0,
                 fmt::format("sweep point {}: {}", point.index, settings)}
          .Toml());
  for (const auto& [key, value] : point.settings) out += key + " = " + value.Toml() + "\n";
  return out;
}

}  // namespace myriad::emulator
