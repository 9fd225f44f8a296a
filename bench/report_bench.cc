// Reports and sweeps at scale: the HTML report and the grouped summary of a 16,384-rank run,
// and a 10,000-point sweep's grid and result tables. Figures in docs/performance.md.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "myriad/emulator/report.h"
#include "myriad/emulator/sweep.h"

namespace myriad::emulator {
namespace {

// A run shaped like a folded simulate of 16,384 ranks: per-rank figures for all, 8 ranks'
// timelines of `slices` slices each on two streams, and 2,048 data-parallel communicators.
RunResult BigRun(int slices) {
  RunResult result;
  result.world_size = 16384;
  result.total_time = FromMicros(1e6);
  for (int r = 0; r < result.world_size; ++r) {
    RankResult rank;
    rank.rank = r;
    rank.end_time = result.total_time;
    rank.compute = FromMicros(7e5);
    rank.exposed_comm = FromMicros(2e5);
    rank.idle = FromMicros(1e5);
    rank.peak_memory = 60ull << 30;
    rank.exposed_by_comm = {{"tp.d0.p0", FromMicros(1.5e5)}, {"dp.t0.p0", FromMicros(5e4)}};
    result.ranks.push_back(rank);
  }
  for (int t = 0; t < 2048; ++t) {
    CollectiveStats c;
    c.comm = "dp.t" + std::to_string(t % 8) + ".p" + std::to_string(t / 8);
    c.bytes = 1 << 28;
    c.calls = 4;
    c.duration = FromMicros(5000);
    result.collectives.push_back(c);
  }
  const double step = 1e6 / slices;
  for (int r = 0; r < 8; ++r)
    for (int track = 0; track < 2; ++track)
      for (int i = 0; i < slices; ++i)
        result.timeline.push_back({r, track, track == 0 ? "gemm" : "allreduce on 'tp.d0.p0'",
                                   track == 0 ? "kernel" : "communication", FromMicros(i * step),
                                   FromMicros(step * 0.8), ""});
  result.kernel_timing = {{"library", 1000, FromMicros(7e5)}};
  return result;
}

void BM_ReportHtml(benchmark::State& state) {
  const RunResult result = BigRun(static_cast<int>(state.range(0)));
  RunContext context;
  context.command = "simulate";
  for (auto _ : state) benchmark::DoNotOptimize(ReportHtml(result, context));
  state.SetLabel(std::to_string(result.timeline.size()) + " timeline slices");
}
BENCHMARK(BM_ReportHtml)->Arg(1000)->Arg(50000)->Unit(benchmark::kMillisecond);

void BM_GroupCollectives(benchmark::State& state) {
  const RunResult result = BigRun(1);
  for (auto _ : state) benchmark::DoNotOptimize(GroupCollectives(result.collectives));
}
BENCHMARK(BM_GroupCollectives)->Unit(benchmark::kMicrosecond);

// A 10 x 10 x 10 x 10 grid with a constraint, then its four result files.
std::string SweepFile() {
  const std::string path = "/tmp/myriad_report_bench_sweep.toml";
  std::ofstream(path) << "base = \"base.toml\"\nconstraints = [\"a * b <= 50\"]\n[axes]\n"
                         "a = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nb = [1, 2, 3, 4, 5, 6, 7, 8, 9, "
                         "10]\nc = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
                         "d = [\"w\", \"x\", \"y\", \"z\", \"v\", \"u\", \"t\", \"s\", \"r\", "
                         "\"q\"]\n";
  return path;
}

void BM_LoadSweep(benchmark::State& state) {
  const std::string path = SweepFile();
  for (auto _ : state) benchmark::DoNotOptimize(LoadSweep(path));
}
BENCHMARK(BM_LoadSweep)->Unit(benchmark::kMillisecond);

void BM_SweepResults(benchmark::State& state) {
  SweepPlan plan = LoadSweep(SweepFile()).value();
  for (SweepPoint& p : plan.points) {
    if (p.status == PointStatus::kExcluded) continue;
    p.status = PointStatus::kOk;
    p.gpus = 64;
    p.hbm_bytes = 80.0 * (1 << 30);
    p.planned_memory_bytes = 40.0 * (1 << 30);
    p.metrics["tokens_per_second"] = 1000.0 + p.index;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(SweepResultsJson(plan));
    benchmark::DoNotOptimize(SweepResultsCsv(plan));
    benchmark::DoNotOptimize(SweepResultsMarkdown(plan));
    benchmark::DoNotOptimize(SweepResultsHtml(plan));
  }
  state.SetLabel(std::to_string(plan.points.size()) + " points");
}
BENCHMARK(BM_SweepResults)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace myriad::emulator

BENCHMARK_MAIN();
