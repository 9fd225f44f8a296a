// The work counted from kernels' PTX against counts made by hand from their source
// (data/counted_kernels.cu), and the PTX read back out of the object's compressed fatbin.
#include "myriad/emulator/kernel_code.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace myriad::emulator {
namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::vector<KernelCode>& Kernels() {
  static const auto* kernels = [] {
    auto r = AnalyzePtx(ReadFile(COUNTED_KERNELS_PTX));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return new std::vector<KernelCode>(r.ok() ? *r : std::vector<KernelCode>{});
  }();
  return *kernels;
}

const KernelCode& Kernel(std::string_view name) {
  for (const KernelCode& k : Kernels())
    if (k.name() == name) return k;
  ADD_FAILURE() << "no kernel " << name;
  static const KernelCode* none = nullptr;
  return *none;
}

LaunchArgument Value(std::int64_t v) { return {true, v}; }
const LaunchArgument kUnknown{};

TEST(KernelCode, FindsEveryEntryWithItsParameters) {
  ASSERT_EQ(Kernels().size(), 6u);
  const KernelCode& saxpy = Kernel("_Z5saxpyifPKfPf");
  ASSERT_EQ(saxpy.params().size(), 4u);
  EXPECT_EQ(saxpy.params()[0].size, 4);
  EXPECT_TRUE(saxpy.params()[0].extent);  // n bounds the loop
  EXPECT_FALSE(saxpy.params()[1].extent);
  EXPECT_FALSE(saxpy.params()[0].address);
  EXPECT_TRUE(saxpy.params()[2].address);
  EXPECT_TRUE(saxpy.params()[3].address);
  EXPECT_EQ(saxpy.loops(), 1);
  EXPECT_TRUE(saxpy.notes().empty());
}

TEST(KernelCode, GridStrideLoopCountsEveryElementOnce) {
  const int n = 1 << 20;  // 16 elements per thread
  const LaunchArgument args[] = {Value(n), kUnknown, Value(4 * n), Value(4 * n)};
  const KernelWork w = Kernel("_Z5saxpyifPKfPf").Work({256, 1, 1}, {256, 1, 1}, args);
  EXPECT_DOUBLE_EQ(w.threads, 65536);
  EXPECT_DOUBLE_EQ(w.global_bytes, 12.0 * n);  // x and y read, y written
  EXPECT_DOUBLE_EQ(w.fma_flops, 2.0 * n);
  EXPECT_EQ(w.assumed_loops, 0);
  EXPECT_EQ(w.assumed_branches, 0);
  // A grid larger than the array: the guard idles the threads past n.
  const LaunchArgument small[] = {Value(1000), kUnknown, Value(4000), Value(4000)};
  const KernelWork s = Kernel("_Z5saxpyifPKfPf").Work({8, 1, 1}, {256, 1, 1}, small);
  EXPECT_NEAR(s.global_bytes, 12.0 * 1000, 12.0 * 2048 / 16);  // within one sample's share
}

TEST(KernelCode, SharedMemoryReduction) {
  const long n = 1l << 22;
  const LaunchArgument args[] = {Value(4 * n), Value(4), Value(n)};
  const KernelWork w = Kernel("_Z9block_sumILi256EEvPKfPfl").Work({1024, 1, 1}, {256, 1, 1}, args);
  // Global: every input read once (the per-block atomic is 8 bytes of 1024 blocks).
  EXPECT_NEAR(w.global_bytes, 4.0 * n, 0.01 * 4 * n);
  // FLOPs: n adds in the loop, 255 per block in the tree.
  const double flops = n + 255.0 * 1024;
  EXPECT_NEAR(w.fma_flops, flops, 0.02 * flops);
  EXPECT_EQ(w.assumed_loops, 0);
}

TEST(KernelCode, TensorCoreTiles) {
  const int m = 1024, n = 1024, k = 1024;
  const LaunchArgument args[] = {Value(2 * m * k), Value(2 * k * n), Value(4 * m * n),
                                 Value(m),         Value(n),         Value(k)};
  const KernelWork w =
      Kernel("_Z9wmma_gemmPK6__halfS1_Pfiii").Work({n / 16, m / 16, 1}, {32, 1, 1}, args);
  EXPECT_DOUBLE_EQ(w.tensor_flops, 2.0 * m * n * k);
  EXPECT_EQ(w.tensor_dtype, DataType::kFloat16);
  // Each warp loads a 16x16 half tile of A and of B per step of 16 along K, and stores its
  // 16x16 float tile: (64 x 1024 + 1024) bytes for each of the 4096 warps.
  EXPECT_DOUBLE_EQ(w.global_bytes, 4096.0 * (64 * 1024 + 1024));
  EXPECT_TRUE(Kernel("_Z9wmma_gemmPK6__halfS1_Pfiii").params()[5].extent);
}

TEST(KernelCode, SeedsNeverChangeTheWork) {
  const KernelCode& adamw = Kernel("_Z14adamw_roundingP13__nv_bfloat16PfPKfS1_S1_mfffj");
  ASSERT_EQ(adamw.params().size(), 10u);
  EXPECT_TRUE(adamw.params()[5].extent);   // n
  EXPECT_FALSE(adamw.params()[9].extent);  // the seed
  const std::int64_t n = 1 << 20;
  std::vector<LaunchArgument> args = {Value(2 * n), Value(4 * n), Value(4 * n), Value(4 * n),
                                      Value(4 * n), Value(n),     kUnknown,     kUnknown,
                                      kUnknown,     Value(17)};
  const KernelWork a = adamw.Work({4096, 1, 1}, {256, 1, 1}, args);
  args[9] = Value(4'000'000'007);
  const KernelWork b = adamw.Work({4096, 1, 1}, {256, 1, 1}, args);
  // grads, m, v, master read; m, v, master written; the BF16 copy written.
  EXPECT_DOUBLE_EQ(a.global_bytes, 30.0 * n);
  EXPECT_DOUBLE_EQ(a.global_bytes, b.global_bytes);
  EXPECT_DOUBLE_EQ(a.instructions, b.instructions);
  EXPECT_DOUBLE_EQ(a.sfu_ops, b.sfu_ops);
}

TEST(KernelCode, ExtentsChangeTheWork) {
  const KernelCode& k = Kernel("_Z11scale_firstPfii");
  EXPECT_TRUE(k.params()[2].extent);
  const int n = 1 << 20;
  const LaunchArgument all[] = {Value(4 * n), Value(n), Value(n)};
  const LaunchArgument half[] = {Value(4 * n), Value(n), Value(n / 2)};
  EXPECT_DOUBLE_EQ(k.Work({4096, 1, 1}, {256, 1, 1}, all).global_bytes, 8.0 * n);
  EXPECT_DOUBLE_EQ(k.Work({4096, 1, 1}, {256, 1, 1}, half).global_bytes, 4.0 * n);
}

TEST(KernelCode, LoopsBoundedByDataAreBoundedByTheAllocations) {
  const KernelCode& k = Kernel("_Z12csr_row_sumsPKiPKfPfi");
  // The loop nvcc unrolled by four and its remainder loop: both run to a bound in memory.
  ASSERT_EQ(k.notes().size(), 2u);
  EXPECT_NE(k.notes()[0].find("not an extent"), std::string::npos) << k.notes()[0];
  const int rows = 1000;
  const double values = 4e6;
  const LaunchArgument args[] = {Value(4 * (rows + 1)), Value(4'000'000), Value(4 * rows),
                                 Value(rows)};
  const KernelWork w = k.Work({4, 1, 1}, {256, 1, 1}, args);
  EXPECT_EQ(w.assumed_loops, 2);
  const double footprint = values + 8 * rows + 4;
  EXPECT_GT(w.global_bytes, 0.5 * footprint);
  EXPECT_LT(w.global_bytes, 1.5 * footprint);
}

TEST(KernelCode, ReadsThePtxOutOfTheObjectsCompressedFatbin) {
  auto modules = PtxInElfFile(COUNTED_KERNELS_OBJECT, 64 << 20);
  ASSERT_TRUE(modules.ok()) << modules.status().message();
  ASSERT_EQ(modules->size(), 1u);
  auto kernels = AnalyzePtx(modules->front());
  ASSERT_TRUE(kernels.ok());
  // The same kernels as nvcc -ptx wrote (the fatbin's copy has its comments stripped).
  ASSERT_EQ(kernels->size(), Kernels().size());
  for (std::size_t i = 0; i < kernels->size(); ++i) {
    EXPECT_EQ((*kernels)[i].name(), Kernels()[i].name());
    EXPECT_EQ((*kernels)[i].instructions(), Kernels()[i].instructions());
  }
}

TEST(KernelCode, BadInputIsOneLine) {
  EXPECT_FALSE(AnalyzePtx("hello").ok());
  auto unclosed = AnalyzePtx(".version 9.0\n.visible .entry k(\n.param .u32 n\n)\n{\n ret;\n");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_NE(unclosed.status().message().find("does not close"), std::string::npos);
  const std::byte junk[32] = {};
  EXPECT_FALSE(PtxInFatbin(junk).ok());
  EXPECT_FALSE(PtxInElfFile("/nonexistent", 1 << 20).ok());
  EXPECT_FALSE(PtxInElfFile(COUNTED_KERNELS_PTX, 1 << 20).ok());  // text, not ELF
}

}  // namespace
}  // namespace myriad::emulator
