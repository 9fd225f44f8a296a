// `myriad simulate SCENARIO`: a synthetic training iteration of the scenario's [workload] on
// its cluster, with throughput, model FLOP/s and MFU beside the engine's report.
#include <fmt/format.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/run_flags.h"
#include "myriad/emulator/scenario.h"
#include "myriad/emulator/workload.h"

namespace myriad::cli {
namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}  // namespace
namespace {

const std::string kSimulateUsage =
    std::string(
        "usage: myriad simulate SCENARIO [options]\n"
        "\n"
        "Generates the op streams of the scenario's [workload] (a transformer trained with TP,\n"
        "PP and DP as Megatron-LM runs it) and runs them on its cluster. Prints the engine's\n"
        "summary plus tokens/s, model TFLOP/s per GPU and MFU (Megatron's FLOP formula).\n"
        "\n"
        "  --no-fold                simulate every data-parallel replica (default: one, whose\n"
        "                           data-parallel collectives are timed on all replicas' GPUs)\n") +
    kRunFlagsUsage;

}  // namespace

int RunSimulate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto usage_error = [&](const std::string& msg) {
    err << "myriad simulate: error: " << msg << "\n" << kSimulateUsage;
    return kExitBadInput;
  };
  std::string scenario_path;
  RunFlags flags;
  bool fold = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string flag_error;
    if (ParseRunFlag(args, i, flags, flag_error)) {
      if (!flag_error.empty()) return usage_error(flag_error);
      continue;
    }
    if (a == "--help" || a == "-h") {
      out << kSimulateUsage;
      return kExitOk;
    } else if (a == "--no-fold") {
      fold = false;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option '" + a + "'");
    } else if (scenario_path.empty()) {
      scenario_path = a;
    } else {
      return usage_error("unexpected argument '" + a + "'");
    }
  }
  if (scenario_path.empty()) return usage_error("missing SCENARIO");
  auto scenario = emulator::LoadScenario(scenario_path);
  if (!scenario.ok()) {
    err << "myriad: error: " << scenario.status().message() << "\n";
    return kExitBadInput;
  }
  if (!scenario->workload) {
    err << "myriad: error: " << scenario_path << ": no [workload] to simulate\n";
    return kExitBadInput;
  }
  const emulator::WorkloadSpec& spec = *scenario->workload;
  const netmodel::Cluster& cluster = scenario->cluster;
  auto workload = emulator::MakeSyntheticWorkload(spec, cluster, fold);
  if (!workload.ok()) {
    err << "myriad: error: " << workload.status().message() << "\n";
    return kExitBadInput;
  }
  auto result = emulator::RunEngine(**workload, cluster, flags.engine_options());
  if (!result.ok()) {
    err << "myriad: error: " << result.status().message() << "\n";
    return kExitFailure;
  }
  // Throughput from the iteration time, with Megatron's FLOP count (docs/workloads.md).
  const double seconds = emulator::ToMicros(result->iteration_time()) * 1e-6;
  const double gpus = cluster.total_gpus();
  const double tokens = static_cast<double>(spec.training.global_batch) * spec.model.seq;
  // Megatron reports TFLOP/s including recomputed work; MFU (PaLM's definition) counts only
  // the model's own FLOPs, so recomputation cannot inflate it.
  const double tflops = spec.iteration_flops() / seconds / gpus / 1e12;
  const double model_flops = spec.iteration_flops(emulator::Recompute::kNone);
  const double mfu_tflops = model_flops / seconds / gpus / 1e12;
  const double peak =
      (spec.training.precision == emulator::DataType::kFloat8e4m3 && cluster.gpu.fp8_flops > 0
           ? cluster.gpu.fp8_flops
           : cluster.gpu.bf16_flops) /
      1e12;
  const int p = spec.parallel.pp, m = spec.micro_batches();
  // Planned per GPU (first pipeline stage, the fullest); the engine's peak_memory_bytes is what
  // the run's mallocs reached.
  const emulator::WorkloadSpec::RankMemory mem = spec.rank_memory(cluster.total_gpus());
  // Exposed communication per parallel axis (the communicator name up to its first '.'), mean
  // over the simulated ranks, per iteration.
  const std::vector<std::string> axes = {"tp", "pp", "dp"};
  std::vector<double> exposed(axes.size(), 0);
  for (const emulator::RankResult& r : result->ranks)
    for (const auto& [comm, time] : r.exposed_by_comm)
      for (size_t a = 0; a < axes.size(); ++a)
        if (comm.substr(0, comm.find('.')) == axes[a]) exposed[a] += emulator::ToMicros(time);
  const double per_iteration =
      static_cast<double>(result->ranks.size()) *
      static_cast<double>(std::max<size_t>(1, result->iteration_ends.size() - 1));
  for (double& e : exposed) e /= per_iteration;
  const double bubble = static_cast<double>(p - 1) / (m + p - 1);
  emulator::RunContext context{
      "simulate", scenario->name, scenario_path, (*workload)->description(), "analytical", &cluster,
      {}};
  context.extra = {
      {"gpus", fmt::format("{}", cluster.total_gpus())},
      {"tokens_per_second", fmt::format("{:.1f}", tokens / seconds)},
      {"model_tflops_per_gpu", fmt::format("{:.3f}", tflops)},
      {"mfu", fmt::format("{:.4f}", mfu_tflops / peak)},
      {"pipeline_bubble_fraction", fmt::format("{:.4f}", bubble)},
      {"micro_batches", fmt::format("{}", m)},
      {"exposed_comm_us_per_iteration",
       fmt::format("{{\"tp\": {:.3f}, \"pp\": {:.3f}, \"dp\": {:.3f}}}", exposed[0], exposed[1],
                   exposed[2])},
      {"memory_per_gpu_bytes",
       fmt::format("{{\"weights\": {:.0f}, \"gradients\": {:.0f}, \"optimizer\": {:.0f}, "
                   "\"activations\": {:.0f}, \"total\": {:.0f}}}",
                   mem.weights, mem.gradients, mem.optimizer, mem.peak_activations, mem.peak())},
  };
  const int status = FinishRun(*result, context, flags, out, err);
  out << fmt::format(
      "\nworkload ({} GPUs: tp {} x pp {} x dp {}; {} micro-batches of {} sequences)\n"
      "  tokens per second      {:>14.1f}\n"
      "  model TFLOP/s per GPU  {:>14.3f}  (Megatron's formula, {} FLOP per iteration)\n"
      "  MFU                    {:>14.4f}  ({} model FLOP without recomputation, of {:.1f} "
      "TFLOP/s)\n"
      "  1F1B bubble (p-1)/(m+p-1) {:>11.4f}\n"
      "  exposed comm (us/iter) {:>14.1f}  tp, {:.1f} pp, {:.1f} dp (mean over ranks)\n"
      "  memory per GPU (GiB)   {:>14.2f}  weights {:.2f}, gradients {:.2f}, optimizer {:.2f}, "
      "activations {:.2f} ({} micro-batches in flight), of {:.1f}\n",
      cluster.total_gpus(), spec.parallel.tp, spec.parallel.pp,
      spec.data_parallel(cluster.total_gpus()), m, spec.training.micro_batch, tokens / seconds,
      tflops, fmt::format("{:.4g}", spec.iteration_flops()), mfu_tflops / peak,
      fmt::format("{:.4g}", model_flops), peak, bubble, exposed[0], exposed[1], exposed[2],
      mem.peak() / kGiB, mem.weights / kGiB, mem.gradients / kGiB, mem.optimizer / kGiB,
      mem.peak_activations / kGiB, std::min(p, m), cluster.gpu.hbm_bytes / kGiB);
  return status;
}

}  // namespace myriad::cli
