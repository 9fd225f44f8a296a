// The summary's collective table: communicators of one family grouped, means weighted by calls.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "myriad/emulator/report.h"

namespace myriad::emulator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

CollectiveStats Stats(std::string comm, std::uint64_t bytes, std::uint64_t calls, double us) {
  CollectiveStats c;
  c.comm = std::move(comm);
  c.bytes = bytes;
  c.calls = calls;
  c.duration = FromMicros(us);
  c.flow_mean = FromMicros(2 * us);
  return c;
}

TEST(GroupCollectivesTest, OneFamilyOpAndSizeIsOneGroupWithItsCommunicatorsCounted) {
  const std::vector<CollectiveStats> stats = {
      Stats("dp.t0.p0", 1024, 10, 100), Stats("dp.t1.p0", 1024, 30, 200),
      Stats("dp.t0.p0", 2048, 1, 50), Stats("tp.d0.p0", 1024, 5, 10)};
  const std::vector<CollectiveGroup> groups = GroupCollectives(stats);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].family, "dp");
  EXPECT_EQ(groups[0].bytes, 1024u);
  EXPECT_EQ(groups[0].communicators, 2);
  EXPECT_EQ(groups[0].calls, 40u);
  EXPECT_DOUBLE_EQ(groups[0].alone_us, (10 * 100.0 + 30 * 200.0) / 40);
  EXPECT_DOUBLE_EQ(groups[0].mean_us, 2 * (10 * 100.0 + 30 * 200.0) / 40);
  EXPECT_EQ(groups[1].bytes, 2048u);
  EXPECT_EQ(groups[2].family, "tp");
}

TEST(GroupCollectivesTest, DifferentAlgorithmsStayApart) {
  std::vector<CollectiveStats> stats = {Stats("dp.a", 1024, 1, 1), Stats("dp.b", 1024, 1, 1)};
  stats[1].algorithm = netmodel::Algorithm::kTree;
  EXPECT_EQ(GroupCollectives(stats).size(), 2u);
}

TEST(SummaryTest, PrintsOneLinePerGroupNotPerCommunicator) {
  RunResult result;
  result.world_size = 64;
  for (int t = 0; t < 64; ++t)
    result.collectives.push_back(Stats("dp.t" + std::to_string(t) + ".p0", 1 << 20, 4, 100));
  RunContext context;
  context.command = "simulate";
  const std::string summary = FormatSummary(result, context);
  EXPECT_THAT(summary, HasSubstr("  dp         allreduce          1.00 MiB     64      256"));
  EXPECT_THAT(summary, Not(HasSubstr("dp.t1.p0")));
}

}  // namespace
}  // namespace myriad::emulator
