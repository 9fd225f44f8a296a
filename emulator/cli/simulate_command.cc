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
#include "myriad/emulator/validation_set.h"
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
  const emulator::EngineOptions options = flags.engine_options(*scenario, err);
  auto result = emulator::RunEngine(**workload, cluster, options);
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
  const int p = spec.parallel.pp, m = spec.micro_batches(), v = spec.parallel.virtual_stages;
  // Planned per GPU of the fullest pipeline stage; the engine's peak_memory_bytes is what the
  // run's mallocs reached.
  const int stage = spec.fullest_stage(cluster.total_gpus());
  const emulator::WorkloadSpec::RankMemory mem = spec.rank_memory(cluster.total_gpus(), stage);
  // Exposed communication per parallel axis (the communicator name up to its first '.'), mean
  // over the simulated ranks, per iteration.
  const std::vector<std::string> axes = {"tp", "cp", "ep", "pp", "dp", "edp"};
  std::vector<double> exposed(axes.size(), 0);
  for (const emulator::RankResult& r : result->ranks)
    for (const auto& [comm, time] : r.exposed_by_comm)
      for (size_t a = 0; a < axes.size(); ++a)
        if (emulator::CommunicatorFamily(comm) == axes[a]) exposed[a] += emulator::ToMicros(time);
  const double per_iteration =
      static_cast<double>(result->ranks.size()) *
      static_cast<double>(std::max<size_t>(1, result->iteration_ends.size() - 1));
  for (double& e : exposed) e /= per_iteration;
  // The textbook bubble: (p - 1) / (m + p - 1) for 1F1B, (p - 1) / (v m + p - 1) interleaved
  // over v virtual stages (Narayanan et al., SC'21, section 2.2).
  const double bubble = static_cast<double>(p - 1) / (v * m + p - 1);
  std::string exposed_json;
  for (size_t a = 0; a < axes.size(); ++a)
    exposed_json += fmt::format("{}\"{}\": {:.3f}", a ? ", " : "", axes[a], exposed[a]);
  // The axes this layout has (tp, pp and dp always).
  const emulator::ParallelSpec& par = spec.parallel;
  std::string exposed_text;
  for (size_t a = 0; a < axes.size(); ++a) {
    const bool used = axes[a] == "cp"                       ? par.cp > 1
                      : axes[a] == "ep" || axes[a] == "edp" ? par.ep > 1
                                                            : true;
    if (used)
      exposed_text +=
          fmt::format("{}{:.1f} {}", exposed_text.empty() ? "" : ", ", exposed[a], axes[a]);
  }
  std::string layout = fmt::format("tp {} x pp {} x dp {}", par.tp, par.pp,
                                   spec.data_parallel(cluster.total_gpus()));
  if (par.cp > 1) layout += fmt::format(" x cp {}", par.cp);
  if (par.ep > 1) layout += fmt::format(", ep {}", par.ep);
  if (v > 1) layout += fmt::format(", {} virtual stages", v);
  // How sure this is: the published rows of the same kind (docs/validation.md).
  const bool moe = spec.model.experts > 0;
  const emulator::ValidationSpread spread =
      emulator::SpreadFor(emulator::PredictedBy::kSimulate, cluster.gpu, moe);
  emulator::RunContext context{"simulate",
                               scenario->name,
                               scenario_path,
                               (*workload)->description(),
                               std::string(netmodel::ToString(options.fidelity)),
                               &cluster,
                               {},
                               {},
                               {}};
  context.extra = {
      {"gpus", fmt::format("{}", cluster.total_gpus())},
      {"tokens_per_second", fmt::format("{:.1f}", tokens / seconds)},
      {"model_tflops_per_gpu", fmt::format("{:.3f}", tflops)},
      {"mfu", fmt::format("{:.4f}", mfu_tflops / peak)},
      {"attention_flops", spec.training.causal_attention_flops ? "\"causal\"" : "\"full\""},
      {"pipeline_bubble_fraction", fmt::format("{:.4f}", bubble)},
      {"micro_batches", fmt::format("{}", m)},
      {"exposed_comm_us_per_iteration", "{" + exposed_json + "}"},
      {"parameters", fmt::format("{:.0f}", spec.parameters())},
      {"active_parameters", fmt::format("{:.0f}", spec.active_parameters())},
      {"validation",
       fmt::format("{{\"rows\": {}, \"median_error\": {:.4f}, \"worst_error\": {:.4f}}}",
                   spread.rows, spread.median_error, spread.worst_error)},
      {"memory_per_gpu_bytes",
       fmt::format("{{\"stage\": {}, \"weights\": {:.0f}, \"gradients\": {:.0f}, "
                   "\"optimizer\": {:.0f}, \"activations\": {:.0f}, \"total\": {:.0f}}}",
                   stage, mem.weights, mem.gradients, mem.optimizer, mem.peak_activations,
                   mem.peak())},
  };
  const int status = FinishRun(*result, context, flags, out, err);
  // With --json the report carries these figures (context.extra) and is all stdout holds.
  if (!flags.json)
    out << fmt::format(
        "\nworkload ({} GPUs: {}; {} micro-batches of {} sequences)\n"
        "  tokens per second      {:>14.1f}\n"
        "  model TFLOP/s per GPU  {:>14.3f}  (Megatron's formula{}, {} FLOP per iteration)\n"
        "  MFU                    {:>14.4f}  ({} model FLOP without recomputation, of {:.1f} "
        "TFLOP/s)\n"
        "  {:<22} {:>14.4f}\n"
        "  exposed comm (us/iter)  {}  (mean over ranks)\n"
        "  memory per GPU (GiB)   {:>14.2f}  stage {}: weights {:.2f}, gradients {:.2f}, optimizer "
        "{:.2f}, activations {:.2f} ({} {} in flight), of {:.1f}\n"
        "  {}\n",
        cluster.total_gpus(), layout, m, spec.training.micro_batch, tokens / seconds, tflops,
        spec.training.causal_attention_flops ? " with causal attention halved" : "",
        fmt::format("{:.4g}", spec.iteration_flops()), mfu_tflops / peak,
        fmt::format("{:.4g}", model_flops), peak,
        v > 1 ? "bubble (p-1)/(vm+p-1)" : "1F1B bubble (p-1)/(m+p-1)", bubble, exposed_text,
        mem.peak() / kGiB, stage, mem.weights / kGiB, mem.gradients / kGiB, mem.optimizer / kGiB,
        mem.peak_activations / kGiB, mem.in_flight, v > 1 ? "model chunks" : "micro-batches",
        cluster.gpu.hbm_bytes / kGiB,
        emulator::ValidationLine(emulator::PredictedBy::kSimulate, cluster.gpu, moe));
  return status != kExitOk
             ? status
             : GateAgainstBaseline(*result, context, flags, flags.json ? err : out, err);
}

}  // namespace myriad::cli
