// The kernel timing chain: order, statistics, coverage report (docs/kernel-timing.md).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "myriad/emulator/kernel_timing.h"
#include "myriad/netmodel/power.h"
#include "tests/netmodel/test_clusters.h"
#include "timing/code_counts.h"
#include "timing/launch_guess.h"
#include "timing/library_model.h"
#include "timing/pytorch_kernels.h"

namespace myriad::emulator {
namespace {

using netmodel::testing::DgxCluster;

const std::string kHeader =
    "# myriad-kernel-profile v1\n"
    "gpu\tkernel\tgrid\tblock\tshared_mem\tsamples\tmean_us\tmedian_us\tmin_us\tmax_us\t"
    "stddev_us\n";

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// A profile where every kernel has one `*` row with the given median.
std::string Profile(const std::string& file,
                    const std::vector<std::pair<std::string, double>>& kernels,
                    const std::string& gpu = "h100-sxm") {
  std::string text = kHeader;
  for (const auto& [name, us] : kernels) {
    const std::string v = std::to_string(us);
    text += gpu + "\t" + name + "\t*\t*\t*\t5\t" + v + "\t" + v + "\t" + v + "\t" + v + "\t0\n";
  }
  return WriteFile(file, text);
}

std::unique_ptr<KernelTimer> MakeTimer(const netmodel::Cluster& cluster,
                                       KernelTimingOptions options = {}) {
  Result<std::unique_ptr<KernelTimer>> timer = KernelTimer::Create(cluster, options);
  EXPECT_TRUE(timer.ok()) << timer.status().message();
  return timer.ok() ? std::move(timer).value() : nullptr;
}

Op Kernel(NameTable& names, const std::string& name, SimTime duration = -1) {
  Op op;
  op.kind = OpKind::kKernel;
  op.name = names.Intern(name);
  op.grid = {132, 1, 1};
  op.block = {256, 1, 1};
  op.duration = duration;
  return op;
}

std::vector<std::string> ProviderNames(const KernelTimer& timer) {
  std::vector<std::string> names;
  for (const ProviderStats& s : timer.stats()) names.push_back(s.provider);
  return names;
}

TEST(KernelTimer, ChainWithoutProfiles) {
  auto timer = MakeTimer(DgxCluster("h100-sxm", 1));
  ASSERT_NE(timer, nullptr);
  EXPECT_EQ(ProviderNames(*timer),
            (std::vector<std::string>{"trace", "pytorch kernels", "kernel code", "library",
                                      "launch guess", "fallback"}));
  for (const ProviderStats& s : timer->stats()) {
    EXPECT_EQ(s.ops, 0u);
    EXPECT_EQ(s.total, 0);
  }
  EXPECT_TRUE(timer->Uncovered(NameTable()).empty());
}

// Kernels no model knows: their bytes guessed from the launch (each pointer parameter's array
// one element a thread, never more than the pointers reach; integer arguments unused), timed
// as streaming memory by the launch guess, named in Guessed() by total; without it, the
// fallback.
TEST(KernelTimer, AKernelNoModelKnowsIsTimedByAGuessFromItsLaunch) {
  const netmodel::Cluster cluster = DgxCluster("h100-sxm", 1);
  NameTable names;
  Op op;
  op.kind = OpKind::kKernel;
  // void gelu(float*, __nv_bfloat16 const*, int) over 1,000,000 threads: 6 bytes each.
  op.name = names.Intern("_Z4geluPfPK13__nv_bfloat16i");
  op.grid = Dim3{3907, 1, 1};
  op.block = Dim3{256, 1, 1};
  const std::uint64_t reach[] = {4'000'000, 2'000'000};
  ASSERT_TRUE(timing::GuessKernelWork(
      timing::ClassifyKernel(names.Name(op.name)).array_element_bytes, reach, &op));
  EXPECT_EQ(op.bytes, 6'000'000u);  // 3907 x 256 threads x 6 bytes, bounded by the arrays
  EXPECT_TRUE(op.bytes_guessed);
  auto timer = MakeTimer(cluster);
  ASSERT_NE(timer, nullptr);
  const SimTime t = timer->Time(op, names);
  EXPECT_EQ(t, timing::SecondsToSim(timing::StreamingKernelSeconds(6'000'000, cluster.gpu)));
  EXPECT_EQ(timer->stats()[4].provider, "launch guess");
  EXPECT_EQ(timer->stats()[4].ops, 1u);
  ASSERT_EQ(timer->Guessed(names).size(), 1u);
  EXPECT_EQ(timer->Guessed(names)[0].total, t);
  // No pointer parameters (a functor): 8 bytes a thread; an extern "C" name says nothing more.
  Op bare = op;
  bare.grid = Dim3{16, 1, 1};
  bare.name = names.Intern("_Z6kernelv");
  ASSERT_TRUE(timing::GuessKernelWork(
      timing::ClassifyKernel(names.Name(bare.name)).array_element_bytes, {}, &bare));
  EXPECT_EQ(bare.bytes, 4096u * 8);
  // Without the guess the same op is the fallback's.
  KernelTimingOptions off;
  off.launch_guess = false;
  auto plain = MakeTimer(cluster, off);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->Time(op, names), off.fallback_duration);
  EXPECT_EQ(plain->Uncovered(names).size(), 1u);
}

TEST(KernelTimer, FirstAnswerWinsInChainOrder) {
  const netmodel::Cluster cluster = DgxCluster("h100-sxm", 1);
  const std::string a = Profile("chain_a.kdb", {{"gemm", 11}, {"only_a", 12}});
  const std::string b = Profile("chain_b.kdb", {{"gemm", 21}, {"only_b", 22}});
  KernelTimingOptions options;
  options.profile_paths = {a, b};
  options.fallback_duration = 7 * kPicosPerMicro;
  options.sustained_clocks = false;  // the models at the catalog's rates
  auto timer = MakeTimer(cluster, options);
  ASSERT_NE(timer, nullptr);
  EXPECT_EQ(ProviderNames(*timer),
            (std::vector<std::string>{"trace", "profile " + a, "profile " + b, "pytorch kernels",
                                      "kernel code", "library", "launch guess", "fallback"}));
  NameTable names;
  const GemmShape big{8192, 8192, 8192, 1, DataType::kBfloat16};
  const SimTime gemm_model = timing::SecondsToSim(timing::EstimateGemm(big, cluster.gpu).seconds);

  Op op = Kernel(names, "gemm", 3 * kPicosPerMicro);
  op.gemm = big;
  EXPECT_EQ(timer->Time(op, names), 3 * kPicosPerMicro);  // trace beats everything
  op.duration = 0;
  EXPECT_EQ(timer->Time(op, names), 0);  // a recorded zero is an answer
  op.duration = -1;
  EXPECT_EQ(timer->Time(op, names), FromMicros(11));  // first profile beats second and model
  op.name = names.Intern("only_b");
  EXPECT_EQ(timer->Time(op, names), FromMicros(22));  // second profile beats the model
  op.name = names.Intern("cublas_gemm_no_profile");
  EXPECT_EQ(timer->Time(op, names), gemm_model);  // library beats fallback
  op.gemm = GemmShape{};
  EXPECT_EQ(timer->Time(op, names), 7 * kPicosPerMicro);  // nobody: fallback
  Op add = Kernel(names,
                  "void at::native::vectorized_elementwise_kernel<4, "
                  "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>, false>(int, "
                  "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)");
  add.bytes = 1'000'000'000;
  const SimTime streaming = timer->Time(add, names);  // PyTorch's kernel beats the library
  EXPECT_EQ(streaming, timing::SecondsToSim(1e9 / (cluster.gpu.hbm_bandwidth * 0.9)));

  const std::vector<ProviderStats>& s = timer->stats();
  ASSERT_EQ(s.size(), 8u);
  EXPECT_EQ(s[0].ops, 2u);
  EXPECT_EQ(s[0].total, 3 * kPicosPerMicro);
  EXPECT_EQ(s[1].ops, 1u);
  EXPECT_EQ(s[1].total, FromMicros(11));
  EXPECT_EQ(s[2].ops, 1u);
  EXPECT_EQ(s[2].total, FromMicros(22));
  EXPECT_EQ(s[3].ops, 1u);
  EXPECT_EQ(s[3].total, streaming);
  EXPECT_EQ(s[4].ops, 0u);  // kernel code: no op was counted from its code
  EXPECT_EQ(s[5].ops, 1u);
  EXPECT_EQ(s[5].total, gemm_model);
  EXPECT_EQ(s[6].ops, 0u);  // launch guess: no op's bytes were guessed
  EXPECT_EQ(s[7].ops, 1u);
  EXPECT_EQ(s[7].total, 7 * kPicosPerMicro);
  const std::vector<UncoveredKernel> uncovered = timer->Uncovered(names);
  ASSERT_EQ(uncovered.size(), 1u);
  EXPECT_EQ(uncovered[0].name, "cublas_gemm_no_profile");
  EXPECT_EQ(uncovered[0].count, 1u);
}

TEST(KernelTimer, CopiesAndMemsets) {
  const netmodel::Cluster cluster = DgxCluster("h200-sxm", 1);
  auto timer = MakeTimer(cluster);
  ASSERT_NE(timer, nullptr);
  NameTable names;
  Op copy;
  copy.kind = OpKind::kMemcpy;
  copy.copy_kind = MemcpyKind::kDeviceToHost;
  copy.bytes = 1 << 30;
  const SimTime d2h = timer->Time(copy, names);
  EXPECT_EQ(d2h,
            timing::SecondsToSim(
                timing::MemcpySeconds(MemcpyKind::kDeviceToHost, copy.bytes, cluster).value()));
  copy.duration = 5;
  EXPECT_EQ(timer->Time(copy, names), 5);  // a recorded duration wins for copies too
  Op set;
  set.kind = OpKind::kMemset;
  set.bytes = 1 << 20;
  const SimTime memset = timer->Time(set, names);
  EXPECT_EQ(memset, timing::SecondsToSim(timing::MemsetSeconds(set.bytes, cluster.gpu)));
  EXPECT_EQ(timer->stats()[0].ops, 1u);
  EXPECT_EQ(timer->stats()[0].total, 5);
  EXPECT_EQ(timer->stats()[3].ops, 2u);  // library
  EXPECT_EQ(timer->stats()[3].total, d2h + memset);
  EXPECT_EQ(timer->stats()[4].ops, 0u);
}

TEST(KernelTimer, CopiesWithoutARateFallBackButAreNotListedAsKernels) {
  netmodel::Cluster cluster = DgxCluster("h100-sxm", 1);
  cluster.gpu.pcie_generation = 0;  // no host link figure
  KernelTimingOptions options;
  options.fallback_duration = 4;
  auto timer = MakeTimer(cluster, options);
  ASSERT_NE(timer, nullptr);
  NameTable names;
  Op copy;
  copy.kind = OpKind::kMemcpy;
  copy.copy_kind = MemcpyKind::kHostToDevice;
  copy.bytes = 100;
  EXPECT_EQ(timer->Time(copy, names), 4);
  EXPECT_EQ(timer->stats().back().ops, 1u);
  EXPECT_TRUE(timer->Uncovered(names).empty());
}

TEST(KernelTimer, UncoveredMostFrequentFirstTiesByName) {
  KernelTimingOptions options;
  options.fallback_duration = 2 * kPicosPerMicro;
  auto timer = MakeTimer(DgxCluster("h100-sxm", 1), options);
  ASSERT_NE(timer, nullptr);
  NameTable names;
  // Interned in an order unlike the expected report, so sorting is what orders it.
  const char* sequence[] = {"zeta", "beta", "alpha", "zeta", "mid", "beta", "zeta", "alpha"};
  for (const char* name : sequence) timer->Time(Kernel(names, name), names);
  const std::vector<UncoveredKernel> uncovered = timer->Uncovered(names);
  ASSERT_EQ(uncovered.size(), 4u);
  EXPECT_EQ(uncovered[0].name, "zeta");
  EXPECT_EQ(uncovered[0].count, 3u);
  EXPECT_EQ(uncovered[1].name, "alpha");
  EXPECT_EQ(uncovered[1].count, 2u);
  EXPECT_EQ(uncovered[2].name, "beta");
  EXPECT_EQ(uncovered[2].count, 2u);
  EXPECT_EQ(uncovered[3].name, "mid");
  EXPECT_EQ(uncovered[3].count, 1u);
  EXPECT_EQ(timer->stats().back().ops, 8u);
  EXPECT_EQ(timer->stats().back().total, 16 * kPicosPerMicro);
}

TEST(KernelTimer, ProfileRowsOfAnotherGpuDoNotAnswer) {
  const std::string path = Profile("other_gpu.kdb", {{"attn", 30}}, "h200-sxm");
  KernelTimingOptions options;
  options.profile_paths = {path};
  auto h100 = MakeTimer(DgxCluster("h100-sxm", 1), options);
  auto h200 = MakeTimer(DgxCluster("h200-sxm", 1), options);
  ASSERT_NE(h100, nullptr);
  ASSERT_NE(h200, nullptr);
  NameTable names;
  EXPECT_EQ(h200->Time(Kernel(names, "attn"), names), FromMicros(30));
  EXPECT_EQ(h100->Time(Kernel(names, "attn"), names), options.fallback_duration);
  EXPECT_EQ(h100->Uncovered(names).at(0).name, "attn");
}

TEST(KernelTimer, CreateFailsOnABadProfile) {
  const std::string bad = WriteFile("bad.kdb", kHeader + "h100-sxm\tk\t1\t32\t0\t5\t1\n");
  KernelTimingOptions options;
  options.profile_paths = {Profile("good.kdb", {{"k", 1}}), bad};
  Result<std::unique_ptr<KernelTimer>> timer =
      KernelTimer::Create(DgxCluster("h100-sxm", 1), options);
  ASSERT_FALSE(timer.ok());
  EXPECT_EQ(timer.status().message(), bad + ":3: expected 11 tab-separated fields, found 7");

  options.profile_paths = {::testing::TempDir() + "/no_such_profile.kdb"};
  timer = KernelTimer::Create(DgxCluster("h100-sxm", 1), options);
  ASSERT_FALSE(timer.ok());
  EXPECT_EQ(timer.status().message(),
            options.profile_paths[0] + ": cannot read profile database: No such file or directory");

  options.profile_paths.clear();
  options.fallback_duration = -1;
  timer = KernelTimer::Create(DgxCluster("h100-sxm", 1), options);
  ASSERT_FALSE(timer.ok());
  EXPECT_EQ(timer.status().message(), "kernel timing: the fallback duration must be >= 0");
}

TEST(KernelTimer, ExampleProfileLoadsAndAnswersOnH100Only) {
  const std::string path = std::string(MYRIAD_SOURCE_DIR) + "/profiles/h100-example.kdb";
  KernelTimingOptions options;
  options.profile_paths = {path};
  auto h100 = MakeTimer(DgxCluster("h100-sxm", 1), options);
  auto h200 = MakeTimer(DgxCluster("h200-sxm", 1), options);
  ASSERT_NE(h100, nullptr);
  ASSERT_NE(h200, nullptr);
  NameTable names;
  Op op = Kernel(names,
                 "void at::native::vectorized_elementwise_kernel<4, "
                 "at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >(int, "
                 "at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul>)");
  op.grid = {1024, 1, 1};
  op.block = {128, 1, 1};
  EXPECT_EQ(h100->Time(op, names), FromMicros(4.1));
  EXPECT_EQ(h100->stats()[1].ops, 1u);
  EXPECT_EQ(h200->Time(op, names), KernelTimingOptions().fallback_duration);
}

TEST(KernelTimer, SameOpsGiveTheSameTimes) {
  const std::string path = Profile("determinism.kdb", {{"k1", 3.25}, {"k2", 1.5}});
  KernelTimingOptions options;
  options.profile_paths = {path};
  std::vector<std::vector<SimTime>> runs;
  std::vector<std::vector<std::uint64_t>> counts;
  for (int run = 0; run < 2; ++run) {
    auto timer = MakeTimer(DgxCluster("h200-sxm", 1), options);
    ASSERT_NE(timer, nullptr);
    NameTable names;
    std::vector<SimTime> times;
    for (int i = 0; i < 300; ++i) {
      Op op = Kernel(names, "k" + std::to_string(i % 5));
      if (i % 7 == 0) op.gemm = GemmShape{64 * (i + 1), 4096, 1024 + i, 1, DataType::kBfloat16};
      if (i % 11 == 0) op.duration = i;
      times.push_back(timer->Time(op, names));
    }
    runs.push_back(times);
    std::vector<std::uint64_t> c;
    for (const ProviderStats& s : timer->stats()) c.push_back(s.ops);
    for (const UncoveredKernel& u : timer->Uncovered(names)) c.push_back(u.count);
    counts.push_back(c);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(counts[0], counts[1]);
}

TEST(KernelTimerDeathTest, OnlyKernelsCopiesAndMemsetsAreTimed) {
  auto timer = MakeTimer(DgxCluster("h100-sxm", 1));
  ASSERT_NE(timer, nullptr);
  NameTable names;
  Op host;
  host.kind = OpKind::kHost;
  host.duration = 5;
  EXPECT_DEBUG_DEATH(timer->Time(host, names), "kernel, memcpy and memset ops only");
}

}  // namespace
}  // namespace myriad::emulator

namespace myriad::emulator {
namespace {

// Kernels counted from their code: the slowest pipe over the SMs the grid fills, plus the
// kernel floor (timing/code_counts.h).
TEST(KernelTimer, CountedKernelsRunAtTheirSlowestPipe) {
  const netmodel::Cluster cluster = DgxCluster("h100-sxm", 1);
  NameTable names;
  Op op;
  op.kind = OpKind::kKernel;
  op.name = names.Intern("_Z9wmma_gemmPK6__halfS1_Pfiii");
  op.grid = Dim3{64, 64, 1};
  op.block = Dim3{32, 1, 1};
  op.bytes = 1 << 20;
  op.counts.counted = true;
  op.counts.tensor_dtype = DataType::kFloat16;
  op.counts.tensor_flops = 2.0 * 1024 * 1024 * 1024;
  op.counts.instructions = 1e6;
  const timing::CodeCountsEstimate e = timing::EstimateCodeCounts(op, cluster.gpu);
  EXPECT_DOUBLE_EQ(e.tensor, op.counts.tensor_flops / cluster.gpu.bf16_flops);
  EXPECT_GT(e.tensor, e.memory);
  KernelTimingOptions boost;
  boost.sustained_clocks = false;  // the catalog's rates, as EstimateCodeCounts was given
  auto timer = MakeTimer(cluster, boost);
  ASSERT_NE(timer, nullptr);
  EXPECT_EQ(timer->Time(op, names), timing::SecondsToSim(e.tensor + cluster.gpu.kernel_floor));
  EXPECT_EQ(timer->stats()[2].provider, "kernel code");
  EXPECT_EQ(timer->stats()[2].ops, 1u);
  // One block fills one SM of 132: every pipe runs at 1/132 of its rate.
  op.grid = Dim3{1, 1, 1};
  const timing::CodeCountsEstimate one = timing::EstimateCodeCounts(op, cluster.gpu);
  EXPECT_NEAR(one.tensor / e.tensor, cluster.gpu.sm_count, 1e-9);
  // Memory-bound: bytes at the streaming rate.
  op.counts.tensor_flops = 0;
  op.grid = Dim3{4096, 1, 1};
  op.bytes = 1 << 30;
  EXPECT_DOUBLE_EQ(timing::EstimateCodeCounts(op, cluster.gpu).seconds,
                   timing::StreamingKernelSeconds(op.bytes, cluster.gpu));
}

// A kernel counted from its code whose loops ran over data computed on the GPU (a block mask
// built on the device): its count rests on an assumption, and Assumed() names it with its
// time, as the report's summary and JSON `assumed_kernels` list it.
TEST(KernelTimer, CountsWithAssumedLoopsAreNamed) {
  const netmodel::Cluster cluster = DgxCluster("h100-sxm", 1);
  NameTable names;
  Op op;
  op.kind = OpKind::kKernel;
  op.name = names.Intern("triton_tem_fused_flex_attention_0");
  op.grid = Dim3{64, 64, 1};
  op.block = Dim3{128, 1, 1};
  op.bytes = 1 << 20;
  op.counts.counted = true;
  op.counts.tensor_flops = 1e12;
  op.counts.instructions = 1e6;
  auto timer = MakeTimer(cluster, KernelTimingOptions{});
  ASSERT_NE(timer, nullptr);
  const SimTime known = timer->Time(op, names);
  EXPECT_TRUE(timer->Assumed(names).empty());  // every loop followed known data
  op.counts.assumed_loops = 2;
  const SimTime assumed = timer->Time(op, names);
  EXPECT_EQ(assumed, known);  // the same counts time alike: the list says what they rest on
  const std::vector<GuessedKernel> listed = timer->Assumed(names);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].name, "triton_tem_fused_flex_attention_0");
  EXPECT_EQ(listed[0].count, 1u);
  EXPECT_EQ(listed[0].total, assumed);
}

// Kernel time by family, with the models that timed each: the report's table of what carries
// the prediction.
TEST(KernelTimer, FamiliesSayWhichModelTimedHowMuch) {
  const netmodel::Cluster cluster = DgxCluster("h100-sxm", 1);
  NameTable names;
  auto timer = MakeTimer(cluster);
  ASSERT_NE(timer, nullptr);
  // Two GEMM-named kernels, one measured (trace) and one the fallback's; one NCCL kernel.
  const SimTime measured = timer->Time(Kernel(names, "ampere_sgemm_128x64_nn", 30'000'000), names);
  const SimTime fallback = timer->Time(Kernel(names, "volta_sgemm_64x64_nt"), names);
  timer->Time(Kernel(names, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", 5'000'000),
              names);
  const std::vector<FamilyStats> families = timer->Families();
  ASSERT_EQ(families.size(), 2u);
  EXPECT_EQ(families[0].family, "gemm");
  EXPECT_EQ(families[0].ops, 2u);
  EXPECT_EQ(families[0].total, measured + fallback);
  ASSERT_EQ(families[0].by_provider.size(), 2u);
  EXPECT_EQ(families[0].by_provider[0].provider, "trace");
  EXPECT_EQ(families[0].by_provider[0].total, measured);
  EXPECT_EQ(families[0].by_provider[1].provider, "fallback");
  EXPECT_EQ(families[1].family, "nccl kernel");
}

// A model's figure past physics is an error, not a figure: more bytes than the GPU holds, or
// one launch longer than a step. Measurements are not second-guessed.
TEST(KernelTimer, DurationsPastAPhysicalBoundAreNamed) {
  const netmodel::Cluster cluster = DgxCluster("h100-sxm", 1);
  NameTable names;
  auto timer = MakeTimer(cluster);
  ASSERT_NE(timer, nullptr);
  Op huge = Kernel(names, "_Z4geluPfPK13__nv_bfloat16i");
  huge.bytes = static_cast<std::uint64_t>(cluster.gpu.hbm_bytes) * 2;
  huge.bytes_guessed = true;
  const SimTime t = timer->Time(huge, names);
  Op measured = Kernel(names, "_Z4longv", 50'000 * kPicosPerMicro);
  measured.bytes = huge.bytes;
  timer->Time(measured, names);
  std::vector<ImplausibleKernel> bad = timer->Implausible(names, 0);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].name, "_Z4geluPfPK13__nv_bfloat16i");
  EXPECT_EQ(bad[0].provider, "launch guess");
  EXPECT_NE(bad[0].why.find("more than the"), std::string::npos) << bad[0].why;
  // Given a step shorter than a launch, that launch is named too (the guess's and the trace's).
  bad = timer->Implausible(names, t / 2);
  ASSERT_EQ(bad.size(), 3u);
  EXPECT_NE(bad[1].why.find("longer than the whole step"), std::string::npos) << bad[1].why;
  EXPECT_EQ(bad[2].name, "_Z4longv");
  EXPECT_TRUE(timer->Implausible(names, 100'000 * kPicosPerMicro).size() == 1u);
}

// Under a power limit, tensor-core kernels run at the sustained clock (netmodel/power.h) and the
// timer says what that added; memory-bound work keeps its rate.
TEST(KernelTimer, SustainedClocksSlowTensorCoreKernelsOnly) {
  netmodel::Cluster cluster = DgxCluster("h100-sxm", 1);
  cluster.gpu.power_limit = 500;
  auto timer = MakeTimer(cluster);
  KernelTimingOptions boost_options;
  boost_options.sustained_clocks = false;
  auto boost = MakeTimer(cluster, boost_options);
  ASSERT_NE(timer, nullptr);
  ASSERT_NE(boost, nullptr);
  NameTable names;
  Op gemm = Kernel(names, "cublas_gemm");
  gemm.gemm = GemmShape{8192, 8192, 8192, 1, DataType::kBfloat16};
  const SimTime at_boost = boost->Time(gemm, names);
  const SimTime sustained = timer->Time(gemm, names);
  const SimTime expected = timing::SecondsToSim(
      timing::EstimateGemm(gemm.gemm, netmodel::AtSustainedClock(cluster.gpu)).seconds);
  EXPECT_EQ(sustained, expected);
  // An 8192^3 GEMM is compute-bound: nearly the whole of it slows by the clock.
  EXPECT_NEAR(static_cast<double>(at_boost) / static_cast<double>(sustained), 0.707, 0.01);
  EXPECT_EQ(timer->clocks().added, sustained - at_boost);
  EXPECT_NEAR(timer->clocks().clock, 0.707, 1e-9);
  EXPECT_EQ(timer->clocks().power_limit, 500);
  EXPECT_TRUE(timer->clocks().sustained);
  EXPECT_EQ(boost->clocks().added, 0);
  EXPECT_FALSE(boost->clocks().sustained);

  Op memset;
  memset.kind = OpKind::kMemset;
  memset.bytes = 1 << 30;
  EXPECT_EQ(timer->Time(memset, names), boost->Time(memset, names));
  EXPECT_EQ(timer->clocks().added, sustained - at_boost);  // nothing added for it
}

}  // namespace
}  // namespace myriad::emulator
