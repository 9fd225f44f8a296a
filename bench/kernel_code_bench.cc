// Reading kernels' own code: analysing a PTX module (once per kernel image) and counting one
// launch's work from the analysis (once per distinct launch; the live server caches it).
// The PTX is what nvcc makes of tests/emulator/kernel_code/data/counted_kernels.cu.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "myriad/emulator/kernel_code.h"

namespace {

using myriad::emulator::AnalyzePtx;
using myriad::emulator::KernelCode;
using myriad::emulator::LaunchArgument;

std::string Ptx(const char* path = COUNTED_KERNELS_PTX) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void BM_AnalyzeModule(benchmark::State& state) {
  const std::string ptx = Ptx();
  for (auto _ : state) benchmark::DoNotOptimize(AnalyzePtx(ptx));
  state.counters["kernels"] = static_cast<double>(AnalyzePtx(ptx)->size());
  state.counters["bytes"] = static_cast<double>(ptx.size());
}
BENCHMARK(BM_AnalyzeModule)->Unit(benchmark::kMillisecond);

// A launch of the unrolled WMMA GEMM (two loops, joins, 16 sampled threads).
void BM_CountLaunch(benchmark::State& state) {
  const auto kernels = AnalyzePtx(Ptx());
  const KernelCode* gemm = nullptr;
  for (const KernelCode& k : *kernels)
    if (k.name() == "_Z9wmma_gemmPK6__halfS1_Pfiii") gemm = &k;
  const LaunchArgument args[] = {{true, 2 << 20}, {true, 2 << 20}, {true, 4 << 20},
                                 {true, 1024},    {true, 1024},    {true, 1024}};
  for (auto _ : state) benchmark::DoNotOptimize(gemm->Work({64, 64, 1}, {32, 1, 1}, args));
}
BENCHMARK(BM_CountLaunch)->Unit(benchmark::kMicrosecond);

const KernelCode& Find(const std::vector<KernelCode>& kernels, std::string_view name) {
  for (const KernelCode& k : kernels)
    if (k.name() == name) return k;
  std::abort();
}

// A launch of the tree reduction over a block: a geometric loop whose halvings are run for
// each sampled thread.
void BM_CountLaunchGeometric(benchmark::State& state) {
  const auto kernels = AnalyzePtx(Ptx());
  const KernelCode& tree = Find(*kernels, "_Z8tree_sumPKfPfi");
  const LaunchArgument args[] = {{true, 1 << 20}, {true, 4096}, {true, 1 << 18}};
  for (auto _ : state) benchmark::DoNotOptimize(tree.Work({1024, 1, 1}, {256, 1, 1}, args));
}
BENCHMARK(BM_CountLaunchGeometric)->Unit(benchmark::kMicrosecond);

// A launch of the tensor-map copy kernel: its expect_tx bytes evaluated per sampled thread.
void BM_CountLaunchTensorCopies(benchmark::State& state) {
  const auto kernels = AnalyzePtx(Ptx());
  const KernelCode& tma = Find(*kernels, "_Z9tma_tiles14CUtensorMap_stPfi");
  const LaunchArgument args[] = {{}, {true, 1 << 20}, {true, 64}};
  for (auto _ : state) benchmark::DoNotOptimize(tma.Work({132, 1, 1}, {128, 1, 1}, args));
}
BENCHMARK(BM_CountLaunchTensorCopies)->Unit(benchmark::kMicrosecond);

// Inductor's flex-attention templates (tests/emulator/kernel_code/data/README.md): one
// kernel a module, 154 KB and 419 KB of PTX with line info.
void BM_AnalyzeFlexForward(benchmark::State& state) {
  const std::string ptx = Ptx(FLEX_FORWARD_PTX);
  for (auto _ : state) benchmark::DoNotOptimize(AnalyzePtx(ptx));
}
BENCHMARK(BM_AnalyzeFlexForward)->Unit(benchmark::kMillisecond);

void BM_AnalyzeFlexBackward(benchmark::State& state) {
  const std::string ptx = Ptx(FLEX_BACKWARD_PTX);
  for (auto _ : state) benchmark::DoNotOptimize(AnalyzePtx(ptx));
}
BENCHMARK(BM_AnalyzeFlexBackward)->Unit(benchmark::kMillisecond);

// A flex-attention forward launch with a causal block mask's tables as known contents: its
// loops over data make it sample 1,024 threads.
void BM_CountFlexForwardWithItsMask(benchmark::State& state) {
  const auto kernels = AnalyzePtx(Ptx(FLEX_FORWARD_PTX));
  const KernelCode& flex = kernels->front();
  constexpr int kRows = 2 * 32 * 64, kBlocks = 64;
  std::vector<std::int32_t> num(kRows, 1), full(kRows), idx(kRows * kBlocks);
  for (int r = 0; r < kRows; ++r) full[static_cast<std::size_t>(r)] = r % kBlocks;
  const auto bytes = [](const std::vector<std::int32_t>& v) {
    return std::make_shared<const std::string>(reinterpret_cast<const char*>(v.data()),
                                               v.size() * sizeof(std::int32_t));
  };
  std::vector<LaunchArgument> args(flex.params().size(), LaunchArgument(true, 1 << 30));
  args[5].contents = bytes(num);
  args[6].contents = args[8].contents = bytes(idx);
  args[7].contents = bytes(full);
  for (auto _ : state) benchmark::DoNotOptimize(flex.Work({64, 2, 32}, {256, 1, 1}, args));
}
BENCHMARK(BM_CountFlexForwardWithItsMask)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
