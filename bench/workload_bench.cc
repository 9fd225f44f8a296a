// `myriad simulate` without the command: one iteration of a bundled training scenario, folded
// (one data-parallel replica simulated), generated and run through the engine. Figures are
// recorded in docs/performance.md. Real time: the engine runs the ranks on its own thread.
#include <benchmark/benchmark.h>

#include <string>

#include "myriad/emulator/engine.h"
#include "myriad/emulator/scenario.h"
#include "myriad/emulator/workload.h"

namespace myriad::emulator {
namespace {

void Simulate(benchmark::State& state, const std::string& scenario_file) {
  auto scenario = LoadScenario(std::string(MYRIAD_SOURCE_DIR) + "/scenarios/" + scenario_file);
  if (!scenario.ok() || !scenario->workload) {
    state.SkipWithError(scenario.ok() ? "no [workload]" : scenario.status().message().c_str());
    return;
  }
  std::uint64_t ops = 0;
  for (auto _ : state) {
    auto workload = MakeSyntheticWorkload(*scenario->workload, scenario->cluster, true);
    auto result = RunEngine(**workload, scenario->cluster, EngineOptions{});
    if (!result.ok()) {
      state.SkipWithError(result.status().message().c_str());
      return;
    }
    ops = result->simulated_ops;
    benchmark::DoNotOptimize(result->iteration_time());
  }
  state.counters["gpus"] = scenario->cluster.total_gpus();
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["ops_per_s"] =
      benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(Simulate, llama3_8b_x64, "llama3-8b-h100-x64.toml")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(Simulate, llama3_405b_x16384, "llama3-405b-h100-x16384.toml")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(Simulate, llama3_405b_x1024, "llama3-405b-h100-x1024.toml")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(Simulate, megatron_145b_x1536, "validation/megatron-a100-145.6b.toml")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(Simulate, mixtral_8x7b_x64, "mixtral-8x7b-h100-x64.toml")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(Simulate, deepseek_v3_like_x2048, "deepseek-v3-like-h100-x2048.toml")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace myriad::emulator

BENCHMARK_MAIN();
