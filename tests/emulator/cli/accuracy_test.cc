// Accuracy of the analytical model against published figures (shared/reference), as the
// tolerance bands issue 2 sets, on the bundled scenarios users run.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/emulator/cli/validation.h"

namespace myriad::reference {
namespace {

netmodel::CollectiveEstimate Estimate(const char* scenario, const char* op, std::uint64_t bytes,
                                      int ranks = 8, const char* algo = "") {
  auto e = Predict({"", scenario, op, ranks, algo, bytes, 0, 0});
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? *e : netmodel::CollectiveEstimate{};
}

bool IsDgxH100AllReduce(const Row& row) {
  return std::string(row.source) == "dgxc-benchmarking DGX H100";
}

TEST(AccuracyTest, DgxH100AllReduceBusBandwidthWithin15Percent) {
  int checked = 0;
  for (const Row& row : CollectiveRows()) {
    if (!IsDgxH100AllReduce(row) || row.bytes < 64 * kKiB) continue;
    const auto e = Predict(row);
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_NEAR(e->busbw_gbps, row.busbw_gbps, 0.15 * row.busbw_gbps) << SizeLabel(row.bytes);
    ++checked;
  }
  EXPECT_EQ(checked, 8);  // 64 KiB .. 8 GiB
}

TEST(AccuracyTest, DgxH100AllReduceSmallTimesWithin25Percent) {
  int checked = 0;
  for (const Row& row : CollectiveRows()) {
    if (!IsDgxH100AllReduce(row) || row.bytes > 32 * kKiB) continue;
    const auto e = Predict(row);
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_NEAR(e->time_us, row.time_us, 0.25 * row.time_us) << SizeLabel(row.bytes);
    ++checked;
  }
  EXPECT_EQ(checked, 2);  // 8 B and 1 KiB
  // Every size in between sits on the published 13-17 us floor, within 25%.
  for (std::uint64_t bytes = 8; bytes <= 32 * kKiB; bytes *= 2) {
    const double t = Estimate("scenarios/dgx-h100.toml", "allreduce", bytes).time_us;
    EXPECT_GE(t, 13.0 * 0.75) << bytes;
    EXPECT_LE(t, 17.0 * 1.25) << bytes;
  }
}

TEST(AccuracyTest, DgxH100RingLevelsOffAt367) {
  for (const char* op : {"allreduce", "allgather", "reducescatter"}) {
    for (std::uint64_t bytes : {kGiB, 8 * kGiB}) {
      const auto e = Estimate("scenarios/dgx-h100.toml", op, bytes, 8, "ring");
      EXPECT_EQ(e.algorithm, netmodel::Algorithm::kRing);
      EXPECT_NEAR(e.busbw_gbps, 367, 36.7) << op << " " << SizeLabel(bytes);
    }
  }
}

TEST(AccuracyTest, DgxA100AllReduceLargeWithin15PercentOf230) {
  for (std::uint64_t bytes : {kGiB, 8 * kGiB}) {
    const auto e = Estimate("scenarios/dgx-a100.toml", "allreduce", bytes);
    EXPECT_NEAR(e.busbw_gbps, 230, 0.15 * 230) << SizeLabel(bytes);
  }
}

TEST(AccuracyTest, NvlsBusBandwidthRisesWithGpuCount) {
  // nccl issue 1455: about 370 for 2-4 GPUs, then 420 / 440 / 460 / 480 for 5..8.
  for (const Row& row : CollectiveRows()) {
    if (std::string(row.source).rfind("nccl issue 1455 (NVLS", 0) != 0) continue;
    const auto e = Predict(row);
    ASSERT_TRUE(e.ok());
    EXPECT_NEAR(e->busbw_gbps, row.busbw_gbps, 0.05 * row.busbw_gbps) << row.ranks << " GPUs";
  }
}

TEST(AccuracyTest, NetworkRowsWithin10Percent) {
  for (const Row& row : CollectiveRows()) {
    const std::string source = row.source;
    if (source.find("CX-7") == std::string::npos && source.find("AllToAll") == std::string::npos)
      continue;
    const auto e = Predict(row);
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_NEAR(e->busbw_gbps, row.busbw_gbps, 0.10 * row.busbw_gbps) << source;
  }
}

TEST(AccuracyTest, ValidationPageShowsTheCurrentModel) {
  std::ifstream doc("docs/validation.md");
  ASSERT_TRUE(doc) << "docs/validation.md is missing";
  std::stringstream text;
  text << doc.rdbuf();
  EXPECT_NE(text.str().find(ValidationTable()), std::string::npos)
      << "docs/validation.md is stale: regenerate its table with "
         "./build/tests/emulator/cli/validation_report";
}

}  // namespace
}  // namespace myriad::reference
