// The validation set built into the binary (emulator/report/validation_set.cc) and the spread a
// summary quotes from it.
#include "myriad/emulator/validation_set.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

namespace myriad::emulator {
namespace {

netmodel::GpuSpec Gpu(const char* key) { return *netmodel::FindGpu(key); }

TEST(ValidationSetTest, RowsAreWholeAndUnique) {
  std::set<std::pair<std::string, int>> seen;
  for (const ValidationRow& row : ValidationSet()) {
    EXPECT_FALSE(row.name.empty());
    EXPECT_GT(row.published, 0) << row.name;
    EXPECT_GT(row.predicted, 0) << row.name;
    EXPECT_GT(row.gpus, 0) << row.name;
    EXPECT_TRUE(seen.insert({std::string(row.scenario), static_cast<int>(row.by)}).second)
        << row.scenario << " twice";
    EXPECT_EQ(FindValidationRow(row.scenario, row.by), &row);
  }
  EXPECT_EQ(FindValidationRow("no-such-scenario", PredictedBy::kSimulate), nullptr);
}

TEST(ValidationSetTest, SpreadIsTheMedianAndWorstOfTheSameKind) {
  // Recomputed by hand from the set: the rows of dense training on Ampere by `simulate`.
  std::vector<double> errors;
  int least = 1 << 30, most = 0;
  for (const ValidationRow& row : ValidationSet()) {
    if (row.by != PredictedBy::kSimulate || row.architecture != 8 || row.moe) continue;
    errors.push_back(row.error());
    least = std::min(least, row.gpus);
    most = std::max(most, row.gpus);
  }
  ASSERT_FALSE(errors.empty());
  std::sort(errors.begin(), errors.end());
  const ValidationSpread s = SpreadFor(PredictedBy::kSimulate, Gpu("a100-sxm-80gb"), false);
  EXPECT_EQ(s.rows, static_cast<int>(errors.size()));
  EXPECT_EQ(s.min_gpus, least);
  EXPECT_EQ(s.max_gpus, most);
  const std::size_t n = errors.size();
  EXPECT_DOUBLE_EQ(s.median_error, n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2);
  const double worst =
      std::abs(errors.front()) > std::abs(errors.back()) ? errors.front() : errors.back();
  EXPECT_DOUBLE_EQ(s.worst_error, worst);
}

TEST(ValidationSetTest, TheLineSaysWhenThereIsNoRowOfThatKind) {
  const std::string none = ValidationLine(PredictedBy::kSimulate, Gpu("h100-sxm"), true);
  EXPECT_EQ(none,
            "validation: no published row of MoE training on Hopper GPUs under `myriad simulate` "
            "yet: no error bar (docs/validation.md)");
  const std::string dense = ValidationLine(PredictedBy::kSimulate, Gpu("a100-sxm-80gb"), false);
  EXPECT_EQ(dense.rfind("validation: dense training on Ampere GPUs under `myriad simulate`, ", 0),
            0u)
      << dense;
  EXPECT_NE(dense.find("published rows (32-3072 GPUs): median error +"), std::string::npos)
      << dense;
  const std::string run = ValidationLine(PredictedBy::kRun, Gpu("h100-sxm"), false);
  EXPECT_EQ(run.rfind("validation: training programs on Hopper GPUs under `myriad run`, ", 0), 0u)
      << run;
}

}  // namespace
}  // namespace myriad::emulator
