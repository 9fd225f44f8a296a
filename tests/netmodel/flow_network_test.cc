// Max-min fair sharing: rates by progressive filling, finish times as flows come and go,
// caps, endless background flows, and re-sharing limited to the flows a change touches.
#include "myriad/netmodel/flow_network.h"

#include <gtest/gtest.h>

#include <vector>

namespace myriad::netmodel {
namespace {

TEST(FlowNetworkTest, OneFlowRunsAtTheLinkRate) {
  FlowNetwork net({10.0});
  const int f = net.Add(0, {0}, 30);
  EXPECT_DOUBLE_EQ(net.rate(f), 10);
  EXPECT_DOUBLE_EQ(net.NextFinish(), 3);
  std::vector<int> done;
  net.AdvanceTo(2.9, &done);
  EXPECT_TRUE(done.empty());
  net.AdvanceTo(3, &done);
  EXPECT_EQ(done, std::vector<int>{f});
  EXPECT_EQ(net.active(), 0);
  EXPECT_EQ(net.NextFinish(), kUnbounded);
}

// Two flows share a link equally; when the short one ends the long one takes the whole link.
TEST(FlowNetworkTest, SharingAndReSharingOnFinish) {
  FlowNetwork net({10.0});
  const int a = net.Add(0, {0}, 10), b = net.Add(0, {0}, 30);
  EXPECT_DOUBLE_EQ(net.rate(a), 5);
  EXPECT_DOUBLE_EQ(net.rate(b), 5);
  std::vector<int> done;
  net.AdvanceTo(10, &done);
  ASSERT_EQ(done, (std::vector<int>{a, b}));
  // a ends at 2 (10 B at 5 B/s); b has 20 B left at 10 B/s: ends at 4.
  FlowNetwork again({10.0});
  again.Add(0, {0}, 10);
  again.Add(0, {0}, 30);
  EXPECT_DOUBLE_EQ(again.NextFinish(), 2);
  again.AdvanceTo(2, &done);
  EXPECT_DOUBLE_EQ(again.NextFinish(), 4);
}

// The textbook case: B crosses both links and is held to 4 by the narrow one; A takes what B
// leaves of the wide one.
TEST(FlowNetworkTest, MaxMinFairness) {
  FlowNetwork net({10.0, 4.0});
  const int a = net.Add(0, {0}, 100), b = net.Add(0, {0, 1}, 100);
  const int c = net.Add(0, {1}, 100);
  EXPECT_DOUBLE_EQ(net.rate(b), 2);  // link 1 split between b and c
  EXPECT_DOUBLE_EQ(net.rate(c), 2);
  EXPECT_DOUBLE_EQ(net.rate(a), 8);
}

TEST(FlowNetworkTest, CapsAndBackgroundFlows) {
  FlowNetwork net({10.0});
  const int capped = net.Add(0, {0}, 100, 2.0);
  const int background = net.Add(0, {0}, kUnbounded);
  EXPECT_DOUBLE_EQ(net.rate(capped), 2);
  EXPECT_DOUBLE_EQ(net.rate(background), 8);
  std::vector<int> done;
  net.AdvanceTo(1000, &done);
  EXPECT_EQ(done, std::vector<int>{capped});  // at 50 s; the background never ends
  EXPECT_DOUBLE_EQ(net.rate(background), 10);
  EXPECT_EQ(net.active(), 1);
}

// A start on links no other flow uses re-shares only its own flow.
TEST(FlowNetworkTest, ChangesReShareOnlyConnectedFlows) {
  FlowNetwork net({10.0, 10.0, 10.0});
  const int a = net.Add(0, {0}, 100);
  EXPECT_DOUBLE_EQ(net.rate(a), 10);
  const std::uint64_t before = net.recomputations();
  const int b = net.Add(1, {1}, 100);
  EXPECT_DOUBLE_EQ(net.rate(b), 10);
  EXPECT_EQ(net.recomputations(), before + 1);
  // a kept its rate and its finish time.
  EXPECT_DOUBLE_EQ(net.NextFinish(), 10);
  const int c = net.Add(2, {1, 2}, 100);
  EXPECT_DOUBLE_EQ(net.rate(b), 5);
  EXPECT_DOUBLE_EQ(net.rate(c), 5);
  EXPECT_DOUBLE_EQ(net.rate(a), 10);
  EXPECT_EQ(net.events(), 3u);
}

TEST(FlowNetworkTest, ZeroCapacityWaitsAndEmptyRoutesEndAtOnce) {
  FlowNetwork net({0.0});
  const int stuck = net.Add(0, {0}, 10);
  EXPECT_DOUBLE_EQ(net.rate(stuck), 0);
  EXPECT_EQ(net.NextFinish(), kUnbounded);
  const int local = net.Add(0, {}, 10);
  std::vector<int> done;
  net.AdvanceTo(0, &done);
  EXPECT_EQ(done, std::vector<int>{local});
}

}  // namespace
}  // namespace myriad::netmodel
