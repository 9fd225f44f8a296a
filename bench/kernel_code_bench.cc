// Reading kernels' own code: analysing a PTX module (once per kernel image) and counting one
// launch's work from the analysis (once per distinct launch; the live server caches it).
// The PTX is what nvcc makes of tests/emulator/kernel_code/data/counted_kernels.cu.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "myriad/emulator/kernel_code.h"

namespace {

using myriad::emulator::AnalyzePtx;
using myriad::emulator::KernelCode;
using myriad::emulator::LaunchArgument;

std::string Ptx() {
  std::ifstream in(COUNTED_KERNELS_PTX);
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

}  // namespace

BENCHMARK_MAIN();
