// The work counted from kernels' PTX against counts made by hand from their source
// (data/counted_kernels.cu), and the PTX read back out of the object's compressed fatbin.
#include "myriad/emulator/kernel_code.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <initializer_list>
#include <memory>
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
  ASSERT_EQ(Kernels().size(), 17u);
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
  EXPECT_NE(k.notes()[0].find("read from memory"), std::string::npos) << k.notes()[0];
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

// The same loops where the launch names the row table's known contents (a copy from the host
// put them there): every row's own length is read, and the rows' loads sum to the values
// the table spans. The kernel writes its sums, not the table.
TEST(KernelCode, LoopsBoundedByKnownContentsReadTheirBounds) {
  const KernelCode& k = Kernel("_Z12csr_row_sumsPKiPKfPfi");
  const int rows = 1024;  // 4 blocks of 256: every thread a row, every row probed
  std::string table((rows + 1) * sizeof(std::int32_t), '\0');
  std::int64_t values = 0;
  for (int r = 0; r <= rows; ++r) {
    const auto start = static_cast<std::int32_t>(values);
    std::memcpy(table.data() + r * sizeof start, &start, sizeof start);
    values += r % 7 + (r % 64 == 0 ? 100 : 0);  // ragged rows, a few long ones
  }
  values -= rows % 7 + (rows % 64 == 0 ? 100 : 0);  // the last entry ends the last row
  LaunchArgument row_start(true, static_cast<std::int64_t>(table.size()));
  row_start.contents = std::make_shared<const std::string>(table);
  const LaunchArgument args[] = {row_start, Value(4 * values), Value(4 * rows), Value(rows)};
  const KernelWork w = k.Work({4, 1, 1}, {256, 1, 1}, args);
  EXPECT_EQ(w.assumed_loops, 0);
  // Each value once, and per row its two table entries and its sum: exact, every thread
  // evaluated (nvcc's remainder loop of 0-3 values, then its loop unrolled by four, which
  // starts where the remainder left its index).
  const double hand = 4.0 * static_cast<double>(values) + (8 + 4) * rows;
  EXPECT_NEAR(w.global_bytes, hand, 1e-9 * hand);
  EXPECT_TRUE(k.params()[2].written);
  EXPECT_FALSE(k.params()[0].written);
  EXPECT_FALSE(k.writes_anywhere());
  // Contents that end before most rows' entries: their counts are not known, and take the
  // allocations' bound as without contents.
  LaunchArgument short_table = row_start;
  short_table.contents = std::make_shared<const std::string>(table.substr(0, 8));
  const LaunchArgument few[] = {short_table, Value(4 * values), Value(4 * rows), Value(rows)};
  EXPECT_EQ(k.Work({4, 1, 1}, {256, 1, 1}, few).assumed_loops, 2);
}

// Inductor's flex-attention templates (data/README.md): their loops over key/value (and, in
// the backward, query) blocks run to counts in the block mask. With the mask's tables as known
// contents, a causal mask over 8,192 tokens in blocks of 128 (64 blocks; per query block qb
// one partial block on the diagonal and qb full ones below it), batch 2 x 32 heads, head dim
// 128: the forward's 128 x 64 tiles take 2 + 2 qb trips of two matmuls (QK^T, PV), 4,160 a
// head, 1.117 TFLOP in all; the backward's dQ programs take the same trips of three matmuls
// (QK^T, dO V^T, dS K) on 128 x 64 tiles and its dK/dV programs 4,160 trips of four (QK^T,
// P^T dO, dO V^T, dS^T Q) on 64 x 128 tiles: 3.908 TFLOP.
struct CausalMask {
  static constexpr int kBatch = 2, kHeads = 32, kBlocks = 64;
  // By (batch, head, row block): [B, H, 64] counts and [B, H, 64, 64] indices, as BlockMask.
  std::vector<std::int32_t> kv_num, kv_idx, full_kv_num, full_kv_idx;
  std::vector<std::int32_t> q_num, q_idx, full_q_num, full_q_idx;
  CausalMask() {
    const int rows = kBatch * kHeads * kBlocks;
    for (auto* v : {&kv_num, &full_kv_num, &q_num, &full_q_num}) v->assign(rows, 0);
    for (auto* v : {&kv_idx, &full_kv_idx, &q_idx, &full_q_idx}) v->assign(rows * kBlocks, 0);
    for (int row = 0; row < rows; ++row) {
      const int block = row % kBlocks;
      kv_num[row] = q_num[row] = 1;  // the diagonal block
      kv_idx[row * kBlocks] = q_idx[row * kBlocks] = block;
      full_kv_num[row] = block;  // the key blocks below the diagonal
      for (int j = 0; j < block; ++j) full_kv_idx[row * kBlocks + j] = j;
      full_q_num[row] = kBlocks - 1 - block;  // the query blocks after it
      for (int j = 0; j < kBlocks - 1 - block; ++j) full_q_idx[row * kBlocks + j] = block + 1 + j;
    }
  }
  static std::shared_ptr<const std::string> Bytes(const std::vector<std::int32_t>& v) {
    return std::make_shared<const std::string>(reinterpret_cast<const char*>(v.data()),
                                               v.size() * sizeof(std::int32_t));
  }
};

KernelCode FlexKernel(const char* path) {
  auto kernels = AnalyzePtx(ReadFile(path));
  EXPECT_TRUE(kernels.ok()) << kernels.status().message();
  EXPECT_EQ(kernels.ok() ? kernels->size() : 0, 1u);
  return kernels.ok() && !kernels->empty() ? kernels->front() : KernelCode(nullptr);
}

// Every parameter a pointer reaching 1 GiB; those listed point at the start of the tables.
std::vector<LaunchArgument> Pointers(
    const KernelCode& k,
    std::initializer_list<std::pair<int, const std::vector<std::int32_t>*>> tables = {}) {
  std::vector<LaunchArgument> args(k.params().size());
  for (LaunchArgument& a : args) a = LaunchArgument(true, std::int64_t{1} << 30);
  for (const auto& [param, table] : tables)
    args[static_cast<std::size_t>(param)].contents = CausalMask::Bytes(*table);
  return args;
}

TEST(KernelCode, FlexAttentionForwardCountsTheBlocksItsMaskKeeps) {
  const KernelCode k = FlexKernel(FLEX_FORWARD_PTX);
  // def_kernel("Q", "K", "V", "LSE", "MAX", "KV_NUM_BLKS", "KV_IDX", "FULL_KV_NUM_BLKS",
  // "FULL_KV_IDX"), then the output: it writes LSE and the output, not the mask.
  ASSERT_EQ(k.params().size(), 12u);
  EXPECT_TRUE(k.params()[3].written);
  EXPECT_TRUE(k.params()[9].written);
  for (int p : {0, 1, 2, 5, 6, 7, 8}) EXPECT_FALSE(k.params()[p].written) << p;
  EXPECT_FALSE(k.writes_anywhere());
  const CausalMask mask;
  const KernelWork w = k.Work(
      {64, 2, 32}, {256, 1, 1},
      Pointers(
          k,
          {{5, &mask.kv_num}, {6, &mask.kv_idx}, {7, &mask.full_kv_num}, {8, &mask.full_kv_idx}}));
  const double hand = 2.0 * 32 * 4160 * 2 * (2.0 * 128 * 64 * 128);
  EXPECT_NEAR(w.tensor_flops, hand, 0.005 * hand);
  EXPECT_EQ(w.assumed_loops, 0);
  // Without the mask's contents its two loops are bounded by the allocations, as said.
  EXPECT_EQ(k.Work({64, 2, 32}, {256, 1, 1}, Pointers(k)).assumed_loops, 2);
}

TEST(KernelCode, FlexAttentionBackwardCountsTheBlocksItsMaskKeeps) {
  const KernelCode k = FlexKernel(FLEX_BACKWARD_PTX);
  // def_kernel("Q", "K", "V", "LSE", "DELTA", "DO", "DQ", "DV", "KV_NUM_BLKS", "KV_IDX",
  // "Q_NUM_BLKS", "Q_IDX", "FULL_KV_NUM_BLKS", "FULL_KV_IDX", "FULL_Q_NUM_BLKS",
  // "FULL_Q_IDX"), then DK.
  ASSERT_EQ(k.params().size(), 19u);
  for (int p : {6, 7, 16}) EXPECT_TRUE(k.params()[p].written) << p;
  for (int p = 8; p < 16; ++p) EXPECT_FALSE(k.params()[p].written) << p;
  const CausalMask mask;
  const KernelWork w = k.Work({128, 2, 32}, {256, 1, 1},
                              Pointers(k, {{8, &mask.kv_num},
                                           {9, &mask.kv_idx},
                                           {10, &mask.q_num},
                                           {11, &mask.q_idx},
                                           {12, &mask.full_kv_num},
                                           {13, &mask.full_kv_idx},
                                           {14, &mask.full_q_num},
                                           {15, &mask.full_q_idx}}));
  const double hand = 2.0 * 32 * 4160 * (3 + 4) * (2.0 * 128 * 64 * 128);
  EXPECT_NEAR(w.tensor_flops, hand, 0.005 * hand);
  EXPECT_EQ(w.assumed_loops, 0);
}

TEST(KernelCode, GeometricLoopsRunTheirHalvingsAndDoublings) {
  // One 4-byte load a trip and one 4-byte store a thread. s = blockDim.x / 2, s /= 2 while
  // s > 0: 256 threads run s = 128, 64, ..., 1 (8 trips); 96 threads s = 48, 24, 12, 6, 3, 1
  // (6); one thread none.
  const KernelCode& halving = Kernel("_Z13halving_readsPKfPf");
  const LaunchArgument pointers[] = {Value(4096), Value(1 << 24)};
  for (const auto& [block, trips] : {std::pair{256, 8}, std::pair{96, 6}, std::pair{1, 0}}) {
    const KernelWork w = halving.Work({64, 1, 1}, {static_cast<unsigned>(block), 1, 1}, pointers);
    EXPECT_DOUBLE_EQ(w.global_bytes, 64.0 * block * (4 * trips + 4)) << block;
    EXPECT_EQ(w.assumed_loops, 0);
  }
  EXPECT_TRUE(halving.notes().empty());
  // s = 1, s <<= 1 while s < n: n = 1000 and 1024 run s = 1, ..., 512 (10 trips), 1025 also
  // 1024 (11), n = 1 none.
  const KernelCode& doubling = Kernel("_Z14doubling_readsPKfPfi");
  EXPECT_TRUE(doubling.params()[2].extent);
  for (const auto& [n, trips] :
       {std::pair{1000, 10}, std::pair{1024, 10}, std::pair{1025, 11}, std::pair{1, 0}}) {
    const LaunchArgument args[] = {Value(4096), Value(1 << 24), Value(n)};
    const KernelWork w = doubling.Work({64, 1, 1}, {128, 1, 1}, args);
    EXPECT_DOUBLE_EQ(w.global_bytes, 64.0 * 128 * (4 * trips + 4)) << n;
    EXPECT_EQ(w.assumed_loops, 0);
  }
  // Signed s /= 2 while s != 0, which nvcc writes (s + (s >> 31)) >> 1 and tests as
  // s + 1 > 2: n = 1000 runs 1000, 500, 250, 125, 62, 31, 15, 7, 3, 1 (10); 2^20 21; 1 one.
  const KernelCode& signed_halving = Kernel("_Z20signed_halving_readsPKfPfi");
  EXPECT_TRUE(signed_halving.params()[2].extent);
  for (const auto& [n, trips] :
       {std::pair{1000, 10}, std::pair{1 << 20, 21}, std::pair{1, 1}, std::pair{0, 0}}) {
    const LaunchArgument args[] = {Value(4096), Value(1 << 24), Value(n)};
    const KernelWork w = signed_halving.Work({64, 1, 1}, {128, 1, 1}, args);
    EXPECT_DOUBLE_EQ(w.global_bytes, 64.0 * 128 * (4 * trips + 4)) << n;
    EXPECT_EQ(w.assumed_loops, 0);
  }
}

TEST(KernelCode, TreeReductionOverAnyBlock) {
  // for (s = blockDim.x / 2; s > 0; s >>= 1) if (threadIdx.x < s) add: not unrollable.
  const KernelCode& k = Kernel("_Z8tree_sumPKfPfi");
  EXPECT_EQ(k.loops(), 1);
  EXPECT_TRUE(k.notes().empty());
  const int blocks = 1024, threads = 256, n = blocks * threads;
  const LaunchArgument args[] = {Value(4 * n), Value(4 * blocks), Value(n)};
  const KernelWork w = k.Work({blocks, 1, 1}, {threads, 1, 1}, args);
  EXPECT_EQ(w.assumed_loops, 0);
  EXPECT_EQ(w.assumed_branches, 0);
  // Every element read once; thread 0 of each block (no sampled thread) stores its sum.
  EXPECT_DOUBLE_EQ(w.global_bytes, 4.0 * n + 4.0 * blocks);
  // 128 + 64 + ... + 1 = 255 adds a block; the 16 sampled threads see the guard to 1/16.
  EXPECT_NEAR(w.fma_flops, 255.0 * blocks, 0.01 * 255 * blocks);
}

TEST(KernelCode, GeometricLoopsOverDataOrHashesAreNotCounted) {
  const KernelCode& k = Kernel("_Z12data_halvingPKjPfj");
  ASSERT_EQ(k.params().size(), 3u);
  EXPECT_FALSE(k.params()[0].extent);
  EXPECT_FALSE(k.params()[2].extent);  // the seed
  ASSERT_EQ(k.notes().size(), 2u);
  LaunchArgument args[] = {Value(4 * 64), Value(4 << 20), Value(17)};
  const KernelWork a = k.Work({64, 1, 1}, {256, 1, 1}, args);
  EXPECT_EQ(a.assumed_loops, 2);
  args[2] = Value(4'000'000'007);
  const KernelWork b = k.Work({64, 1, 1}, {256, 1, 1}, args);
  EXPECT_EQ(b.assumed_loops, 2);
  EXPECT_DOUBLE_EQ(a.global_bytes, b.global_bytes);
  EXPECT_DOUBLE_EQ(a.instructions, b.instructions);
}

TEST(KernelCode, OneLaneOrThreadElectedIsCounted) {
  // Every thread reads 4 bytes; lane 0 of each warp (threadIdx.x % 32 == 0) stores 4.
  const KernelCode& k = Kernel("_Z9warp_sumsPKfPf");
  const double threads = 512.0 * 256;
  const LaunchArgument args[] = {Value(4 << 20), Value(1 << 20)};
  const KernelWork w = k.Work({512, 1, 1}, {256, 1, 1}, args);
  EXPECT_DOUBLE_EQ(w.global_bytes, 4 * threads + 4 * threads / 32);
  EXPECT_DOUBLE_EQ(w.fma_flops, 5 * threads);  // five shuffle-and-add steps
  EXPECT_EQ(w.assumed_branches, 0);
}

TEST(KernelCode, ElectedThreadsAndBlocksAreCountedAsTheirShare) {
  // No sampled thread is thread 0, nor in block 0 or the last block of 64: 4 bytes once, 4
  // a block, 4 a thread of the last block, and 4 for each of the first `count` blocks (that
  // test, on blockIdx.x < count, is sampled: exact for count 32 of 64).
  const KernelCode& k = Kernel("_Z10grid_flagsPfPii");
  EXPECT_TRUE(k.params()[2].extent);
  const LaunchArgument args[] = {Value(4096), Value(4), Value(32)};
  const KernelWork w = k.Work({64, 1, 1}, {128, 1, 1}, args);
  EXPECT_DOUBLE_EQ(w.global_bytes, 4 + 4 * 64 + 4 * 128 + 4 * 32);
  EXPECT_EQ(w.assumed_branches, 0);
}

TEST(KernelCode, AmpereAsyncCopiesAreGlobalLoads) {
  const KernelCode& k = Kernel("_Z10async_copyPK6float4Pf");
  EXPECT_TRUE(k.params()[0].address);
  const LaunchArgument args[] = {Value(16 << 20), Value(4 << 20)};
  const KernelWork w = k.Work({1024, 1, 1}, {256, 1, 1}, args);
  EXPECT_DOUBLE_EQ(w.global_bytes, 1024.0 * 256 * (16 + 4));  // cp.async 16, one float out
}

TEST(KernelCode, BulkCopiesCountTheirSizes) {
  const KernelCode& k = Kernel("_Z9bulk_copyPKfPfi");
  EXPECT_TRUE(k.params()[0].address);
  EXPECT_TRUE(k.params()[1].address);
  EXPECT_TRUE(k.params()[2].extent);  // the bulk store's size
  // Thread 0 of each block copies 4096 bytes in and 4n out; every thread stores a float.
  for (const int n : {1024, 256}) {
    const LaunchArgument args[] = {Value(4 << 20), Value(4 << 20), Value(n)};
    const KernelWork w = k.Work({256, 1, 1}, {128, 1, 1}, args);
    EXPECT_DOUBLE_EQ(w.global_bytes, 256.0 * (4096 + 4 * 128 + 4 * n)) << n;
    EXPECT_EQ(w.assumed_copies, 0);
    EXPECT_EQ(w.assumed_loops, 1);  // the wait on the mbarrier's phase
  }
}

TEST(KernelCode, TensorMapCopiesCountWhatExpectTxTells) {
  const KernelCode& k = Kernel("_Z9tma_tiles14CUtensorMap_stPfi");
  ASSERT_EQ(k.params().size(), 3u);
  EXPECT_EQ(k.params()[0].size, 128);  // the CUtensorMap
  EXPECT_TRUE(k.params()[2].extent);   // tiles
  // The store through the tensor map has no size in the code: a note, and an assumption.
  ASSERT_EQ(k.notes().size(), 2u);
  EXPECT_NE(k.notes()[1].find("tensor store"), std::string::npos) << k.notes()[1];
  // Thread 0 loads `tiles` boxes of 64 x 32 floats, 8192 bytes as its expect_tx says; every
  // thread stores a float.
  for (const int tiles : {8, 3}) {
    const LaunchArgument args[] = {kUnknown, Value(4 << 20), Value(tiles)};
    const KernelWork w = k.Work({132, 1, 1}, {128, 1, 1}, args);
    EXPECT_DOUBLE_EQ(w.global_bytes, 132.0 * (8192 * tiles + 4 * 128)) << tiles;
    EXPECT_EQ(w.assumed_copies, 1);
  }
}

TEST(KernelCode, CopiesOfUnknownSizeAreAssumptionsNotGuesses) {
  // A bulk copy sized by a value read from memory, and a tensor-map load with no expect_tx
  // to tell its bytes (`::` in the opcodes is no label); prefetches and commits move none.
  auto kernels = AnalyzePtx(R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  .shared .align 128 .b8 tile[4096];
  ld.param.u64 %rd1, [k_param_0];
  ld.param.u64 %rd2, [k_param_1];
  cvta.to.global.u64 %rd3, %rd2;
  ld.global.nc.L1::no_allocate.u32 %r1, [%rd3];
  mov.u32 %r2, tile;
  cp.async.bulk.prefetch.L2.global [%rd1], 4096;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1], %r1, [%r3];
  cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd1, {%r1}], [%r3];
  cp.async.bulk.commit_group;
  ret;
}
)");
  ASSERT_TRUE(kernels.ok()) << kernels.status().message();
  const KernelCode& k = kernels->front();
  EXPECT_EQ(k.instructions(), 10);
  ASSERT_EQ(k.notes().size(), 2u);
  EXPECT_NE(k.notes()[0].find("read from memory"), std::string::npos) << k.notes()[0];
  EXPECT_NE(k.notes()[1].find("no expect_tx"), std::string::npos) << k.notes()[1];
  EXPECT_FALSE(k.params()[1].extent);
  const LaunchArgument args[] = {Value(1 << 20), Value(4)};
  const KernelWork w = k.Work({8, 1, 1}, {128, 1, 1}, args);
  EXPECT_DOUBLE_EQ(w.global_bytes, 4.0 * 8 * 128);  // the load only
  EXPECT_EQ(w.assumed_copies, 2);
}

TEST(KernelCode, AssumptionsOfAnySampledThreadCountOncePerSite) {
  // Only the upper half of each block reaches the branch on flags[i], the branch around the
  // loop and the loop bounded by counts[i]: the first sampled thread (threadIdx.x 8) none.
  const KernelCode& k = Kernel("_Z17upper_half_lookupPKiS0_Pfi");
  const int n = 64 * 256;
  const LaunchArgument args[] = {Value(4 * n), Value(4 * n), Value(4 * n), Value(n)};
  const KernelWork w = k.Work({64, 1, 1}, {256, 1, 1}, args);
  EXPECT_EQ(w.assumed_branches, 2);  // eight sampled threads each, one site each
  EXPECT_EQ(w.assumed_loops, 1);
  // With n = 0 no thread gets past the first guard: nothing is assumed.
  const LaunchArgument none[] = {Value(4 * n), Value(4 * n), Value(4 * n), Value(0)};
  const KernelWork z = k.Work({64, 1, 1}, {256, 1, 1}, none);
  EXPECT_EQ(z.assumed_branches, 0);
  EXPECT_EQ(z.assumed_loops, 0);
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
