// Kernels' code found for live processes: by the module a launch names.
#include "kernel_code_index.h"

#include <gtest/gtest.h>

#include <string>

namespace myriad::emulator {
namespace {

// A kernel `k` whose thread loads `vector` 4-byte words (one ld.global of that width).
std::string Module(int vector) {
  const std::string load =
      vector == 1 ? "ld.global.u32 %r1, [%rd2];" : "ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd2];";
  return R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
  .reg .b32 %r<5>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [k_param_0];
  cvta.to.global.u64 %rd2, %rd1;
  )" + load +
         R"(
  ret;
}
)";
}

std::uint64_t Bytes(KernelCodeIndex& index, std::uint16_t module) {
  wire::WireOp w;
  w.module = module;
  Op op;
  op.grid = Dim3{2, 1, 1};
  op.block = Dim3{32, 1, 1};
  EXPECT_TRUE(index.Count(7, "k", timing::KernelClass{}, w, &op));
  return op.bytes;
}

// Triton's autotuning compiles one module per configuration, each naming its kernel alike:
// a launch is counted from its own module's code, not from whichever was loaded last.
TEST(KernelCodeIndex, ALaunchIsCountedFromItsOwnModule) {
  KernelCodeIndex index;
  index.AddModulePtx(7, 1, Module(4));
  index.AddModulePtx(7, 2, Module(1));
  EXPECT_EQ(Bytes(index, 1), 64u * 16);
  EXPECT_EQ(Bytes(index, 2), 64u * 4);
  // A launch that names no module: the newest module's.
  EXPECT_EQ(Bytes(index, 0), 64u * 4);
  // A module loaded later under the first one's name is found for its own launches.
  index.AddModulePtx(7, 3, Module(4));
  EXPECT_EQ(Bytes(index, 3), 64u * 16);
  EXPECT_EQ(Bytes(index, 2), 64u * 4);
}

}  // namespace
}  // namespace myriad::emulator
