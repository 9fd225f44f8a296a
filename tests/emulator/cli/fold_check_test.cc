// The fold check's op comparison (emulator/cli/fold_check.h): the first op a mirror would
// replay wrongly, named by rank, index and what differs.
#include "cli/fold_check.h"

#include <gtest/gtest.h>

#include "myriad/emulator/trace.h"

namespace myriad::cli {
namespace {

using emulator::InMemoryWorkload;
using emulator::Op;
using emulator::OpKind;

Op Kernel(InMemoryWorkload& w, const char* name, std::uint64_t bytes) {
  Op op;
  op.kind = OpKind::kKernel;
  op.name = w.names().Intern(name);
  op.grid = {64, 1, 1};
  op.block = {256, 1, 1};
  op.bytes = bytes;
  return op;
}

// Two replicas of two ranks each: rank r of the second replays rank r - 2.
InMemoryWorkload Replicas() {
  InMemoryWorkload w(4, "two replicas");
  for (int r = 0; r < 4; ++r) {
    w.AddOp(r, Kernel(w, "_Z4stepPfj", 4096));
    Op host;
    host.kind = OpKind::kHost;
    host.duration = 1000 + r;  // host time is the figures' to compare, not the ops'
    w.AddOp(r, host);
  }
  return w;
}

TEST(FoldCheckTest, AlikeReplicasHaveNoUnlikeOp) {
  InMemoryWorkload w = Replicas();
  auto unlike = FirstUnlikeOp(w, 2, 4);
  ASSERT_TRUE(unlike.ok()) << unlike.status().message();
  EXPECT_FALSE(unlike->has_value()) << **unlike;
}

TEST(FoldCheckTest, TheFirstRankAndOpThatDifferAreNamed) {
  InMemoryWorkload w = Replicas();
  w.AddOp(3, Kernel(w, "_Z4stepPfj", 8192));  // rank 3 alone: one more launch
  w.AddOp(1, Kernel(w, "_Z4stepPfj", 4096));
  auto unlike = FirstUnlikeOp(w, 2, 4);
  ASSERT_TRUE(unlike.ok());
  ASSERT_TRUE(unlike->has_value());
  EXPECT_EQ(**unlike,
            "rank 3's op 2 (kernel step(float*, unsigned int) grid 64x1x1 block 256x1x1): bytes "
            "8192 where rank 1 has 4096");
}

TEST(FoldCheckTest, ARankWithMoreOpsIsNamed) {
  InMemoryWorkload w = Replicas();
  Op save;
  save.kind = OpKind::kMemcpy;
  save.copy_kind = emulator::MemcpyKind::kDeviceToHost;
  save.bytes = 1 << 20;
  w.AddOp(0, save);  // rank 0 alone saves a checkpoint
  auto unlike = FirstUnlikeOp(w, 2, 4);
  ASSERT_TRUE(unlike.ok());
  ASSERT_TRUE(unlike->has_value());
  EXPECT_EQ(**unlike,
            "rank 2 has 2 ops where rank 0 has more: op 2 (memcpy d2h of 1048576 bytes) is the "
            "first only rank 0 has");
}

}  // namespace
}  // namespace myriad::cli
