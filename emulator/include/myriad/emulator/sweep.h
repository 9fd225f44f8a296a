// Sweeps: a grid of variations of one base scenario, each point a `myriad simulate` run, and
// the table of their results with the best point by an objective. docs/sweep.md.
//
// A sweep file names the base scenario and its axes (dotted scenario keys to lists of values;
// [[zip]] tables hold lists that vary together), and constraints that leave points out. The
// plan is every point of the grid; a run writes each point's result under the output folder
// (points/NNNN/), so a sweep resumes where it stopped and Slurm array tasks can run the points.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "myriad/status.h"

namespace myriad::emulator {

// One value of an axis, as the sweep file wrote it.
struct SweepValue {
  enum class Kind { kInteger, kFloat, kString, kBoolean } kind = Kind::kInteger;
  double number = 0;  // integers, floats and booleans (0 or 1)
  std::string text;   // strings

  std::string Toml() const;     // as a TOML value: 4, 0.5, "ecmp", true
  std::string Display() const;  // as a person reads it: 4, 0.5, ecmp, true
  bool operator==(const SweepValue& other) const = default;
};

// What a sweep optimises: a metric of the point's report and whether more or less is better.
struct SweepObjective {
  std::string metric = "tokens_per_second";
  bool maximize = true;
};
// "tokens_per_second", "mfu", "model_tflops_per_gpu" (higher is better), "iteration_time_us"
// (lower), or "max:METRIC" / "min:METRIC" for any metric the results hold.
Result<SweepObjective> ParseSweepObjective(const std::string& text);

// Where a point stands. kPending: not run yet; kExcluded: a constraint leaves it out;
// kImpossible: the scenario or the layout cannot be (an indivisible layout, a bad value);
// kOutOfMemory: the run predicted a GPU out of memory; kFailed: the run itself failed.
enum class PointStatus { kPending, kOk, kExcluded, kImpossible, kOutOfMemory, kFailed };
std::string_view ToString(PointStatus status);

struct SweepPoint {
  int index = 0;
  std::vector<std::pair<std::string, SweepValue>> settings;  // axis key -> value, axis order
  PointStatus status = PointStatus::kPending;
  std::string reason;                     // why it is not ok: one line
  std::map<std::string, double> metrics;  // from its report (kOk only)
  int gpus = 0;                           // the point's cluster, once its scenario loaded
  double hbm_bytes = 0;                   // HBM per GPU
  double planned_memory_bytes = 0;        // the memory plan's fullest stage, per GPU
};

// "tp=2, pp=4": a point's settings by the last part of each key.
std::string SettingsText(const SweepPoint& point);

struct SweepPlan {
  std::string sweep_path;         // as given
  std::string base_path;          // the base scenario, as the sweep file names it, resolved
  std::string base_name;          // the base scenario's name
  std::vector<std::string> axes;  // every swept key, in the sweep file's order
  std::vector<std::string> constraints;
  SweepObjective objective;
  std::vector<SweepPoint> points;  // the whole grid, the last axis varying fastest
};

// Reads and checks a sweep file and expands its grid; points a constraint rejects are
// kExcluded. Errors are one line, "FILE:LINE:COLUMN: KEY: message".
Result<SweepPlan> LoadSweep(const std::string& path);

// The scenario file of one point: the base scenario included (by a path relative to
// `point_dir`, where the file will be written) with the point's settings over it.
std::string PointScenarioToml(const SweepPlan& plan, const SweepPoint& point,
                              const std::string& point_dir);

// The outcome of one `myriad simulate` run of a point: its exit status, its stderr and (when
// it succeeded) its JSON report. Sets status, reason and metrics.
void ClassifyPointRun(int exit_status, const std::string& stderr_text,
                      const std::string& report_json, SweepPoint* point);

// Evaluates one constraint ("workload.parallel.tp * workload.parallel.pp <= 64") on a point's
// settings; errors name the constraint.
Result<bool> EvaluateConstraint(const std::string& constraint,
                                const std::vector<std::pair<std::string, SweepValue>>& settings);

// The plan and each point's result as JSON (DIR/plan.json and DIR/points/NNNN/result.json),
// and back: what lets a sweep resume and `myriad sweep collect` merge Slurm's tasks.
std::string PlanJson(const SweepPlan& plan);
Result<SweepPlan> ParsePlanJson(const std::string& json, const std::string& path);
std::string PointResultJson(const SweepPoint& point);
// Reads a point's result into `point` if it is a result of the same settings; false if not.
bool ReadPointResult(const std::string& json, SweepPoint* point);

// The best point by the plan's objective among the ok points, or none.
std::optional<int> BestPoint(const SweepPlan& plan);

// The sweep's outputs: results.json, results.csv, results.md and results.html (a table and two
// plots: the objective per point, and memory per GPU against the GPU's HBM).
std::string SweepResultsJson(const SweepPlan& plan);
std::string SweepResultsCsv(const SweepPlan& plan);
std::string SweepResultsMarkdown(const SweepPlan& plan);
std::string SweepResultsHtml(const SweepPlan& plan);

// "points/0007": a point's folder under the sweep's output folder.
std::string PointFolder(int index);

}  // namespace myriad::emulator
