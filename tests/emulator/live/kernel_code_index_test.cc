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

// Bytes one launch of `kernel` (64 threads) counts, its first pointer naming contents `id` at
// `offset` when id > 0.
std::uint64_t Bytes(KernelCodeIndex& index, std::uint16_t module, const char* kernel = "k",
                    std::uint32_t id = 0, std::uint32_t offset = 0) {
  wire::WireOp w;
  w.module = module;
  if (id > 0) {
    w.content_ref_count = 1;
    w.content_param[0] = 0;
    w.content_id[0] = id;
    w.content_offset[0] = offset;
  }
  Op op;
  op.grid = Dim3{2, 1, 1};
  op.block = Dim3{32, 1, 1};
  EXPECT_TRUE(index.Count(7, kernel, timing::KernelClass{}, w, &op));
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

// A kernel whose thread reads its trip count from p0 and loads that many words of p1; with
// `store`, it writes the count back (so it writes the memory it read its bound from).
std::string CountedLoop(bool store) {
  return std::string(R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry loop(.param .u64 loop_param_0, .param .u64 loop_param_1)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<7>;
  ld.param.u64 %rd1, [loop_param_0];
  ld.param.u64 %rd2, [loop_param_1];
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  ld.global.u32 %r1, [%rd3+4];
  mov.u32 %r2, 0;
$L_loop:
  mul.wide.u32 %rd5, %r2, 4;
  add.s64 %rd6, %rd4, %rd5;
  ld.global.f32 %f1, [%rd6];
  add.s32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra $L_loop;
)") + (store ? "  st.global.u32 [%rd3], %r2;\n" : "") +
         R"(  ret;
}
)";
}

std::uint64_t LoopBytes(KernelCodeIndex& index, std::uint16_t module, std::uint32_t id,
                        std::uint32_t offset = 0) {
  return Bytes(index, module, "loop", id, offset);
}

// A loop bound the kernel reads from memory a copy from the host filled is read from those
// bytes (at the pointer's offset into them); a launch of a kernel that writes them, or one
// whose code is not read, leaves them unknown for the launches after it.
TEST(KernelCodeIndex, KnownContentsBoundTheLoopsThatReadThem) {
  KernelCodeIndex index;
  index.AddModulePtx(7, 1, CountedLoop(false));
  index.AddModulePtx(7, 2, CountedLoop(true));
  const std::int32_t table[] = {1000, 100, 7};
  index.AddContents(7, 5, std::string(reinterpret_cast<const char*>(table), sizeof table));
  // Per thread: the count (4 bytes) and 100 words; 64 threads.
  EXPECT_EQ(LoopBytes(index, 1, 5), 64u * (4 + 100 * 4));
  // The pointer 4 bytes into the table: its count is the next entry, 7.
  EXPECT_EQ(LoopBytes(index, 1, 5, 4), 64u * (4 + 7 * 4));
  // Without contents the loop is bounded by the allocations (none known here: one trip).
  const std::uint64_t unknown = LoopBytes(index, 1, 0);
  EXPECT_LT(unknown, 64u * (4 + 7 * 4));
  // Reading past the contents' end is not known either.
  EXPECT_EQ(LoopBytes(index, 1, 5, 8), unknown);
  // The writing kernel's own launch still reads them; after it, they are not known.
  EXPECT_EQ(LoopBytes(index, 2, 5), 64u * (4 + 100 * 4 + 4));
  EXPECT_EQ(LoopBytes(index, 1, 5), unknown);
  // Contents sent again (a new copy, a new id); then a launch whose code is not read.
  index.AddContents(7, 6, std::string(reinterpret_cast<const char*>(table), sizeof table));
  EXPECT_EQ(LoopBytes(index, 1, 6), 64u * (4 + 100 * 4));
  wire::WireOp other;
  other.content_ref_count = 1;
  other.content_id[0] = 6;
  index.Wrote(7, other);
  EXPECT_EQ(LoopBytes(index, 1, 6), unknown);
}

}  // namespace
}  // namespace myriad::emulator
