// The validation set of docs/validation.md (and docs/workloads.md's SC'21 table): each row's
// published figure and what Myriad predicts for it today. The validation tests
// (tests/emulator/workload/) check the `simulate` rows against fresh predictions; the `run`
// rows are whole torchtitan runs, too long for the test suite, measured on the date
// docs/validation.md gives.
#include "myriad/emulator/validation_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace myriad::emulator {
namespace {

constexpr PredictedBy kSim = PredictedBy::kSimulate;
constexpr PredictedBy kRun = PredictedBy::kRun;

constexpr std::array kRows = {
    // Megatron-LM on Selene, SC'21 Table 1: model TFLOP/s per GPU (docs/workloads.md).
    ValidationRow{"Megatron-LM 1.7B, SC'21", "megatron-a100-1.7b", kSim, 8, 32, false, 137,
                  146.872},
    ValidationRow{"Megatron-LM 3.6B, SC'21", "megatron-a100-3.6b", kSim, 8, 64, false, 138,
                  143.045},
    ValidationRow{"Megatron-LM 7.5B, SC'21", "megatron-a100-7.5b", kSim, 8, 128, false, 142,
                  138.607},
    ValidationRow{"Megatron-LM 18.4B, SC'21", "megatron-a100-18.4b", kSim, 8, 256, false, 135,
                  132.259},
    ValidationRow{"Megatron-LM 39.1B, SC'21", "megatron-a100-39.1b", kSim, 8, 512, false, 138,
                  149.427},
    ValidationRow{"Megatron-LM 76.1B, SC'21", "megatron-a100-76.1b", kSim, 8, 1024, false, 140,
                  156.838},
    ValidationRow{"Megatron-LM 145.6B, SC'21", "megatron-a100-145.6b", kSim, 8, 1536, false, 148,
                  166.143},
    ValidationRow{"Megatron-LM 310.1B, SC'21", "megatron-a100-310.1b", kSim, 8, 1920, false, 155,
                  174.49},
    ValidationRow{"Megatron-LM 529.6B, SC'21", "megatron-a100-529.6b", kSim, 8, 2520, false, 163,
                  179.534},
    ValidationRow{"Megatron-LM 1008B, SC'21", "megatron-a100-1008b", kSim, 8, 3072, false, 163,
                  185.129},
    // torchtitan on Grand Teton H100 at 500 W: tokens/s per GPU.
    ValidationRow{"torchtitan Llama 3.1 8B, 8 GPUs, eager", "torchtitan-llama3-8b-x8", kSim, 9, 8,
                  false, 5762, 6287.76},
    ValidationRow{"torchtitan Llama 3.1 8B, 128 GPUs, eager", "torchtitan-llama3-8b-x128", kSim, 9,
                  128, false, 5605, 6287.19},
    ValidationRow{"torchtitan Llama 3.1 8B, 8 GPUs, compile", "torchtitan-llama3-8b-x8-compile",
                  kSim, 9, 8, false, 6667, 7347.73},
    ValidationRow{"torchtitan Llama 3.1 8B, 128 GPUs, compile", "torchtitan-llama3-8b-x128-compile",
                  kSim, 9, 128, false, 6514, 7350.11},
    ValidationRow{"torchtitan Llama 3.1 8B, 8 GPUs, compile + float8",
                  "torchtitan-llama3-8b-x8-compile-float8", kSim, 9, 8, false, 8532, 9390.58},
    ValidationRow{"torchtitan Llama 3.1 8B, 128 GPUs, compile + float8",
                  "torchtitan-llama3-8b-x128-compile-float8", kSim, 9, 128, false, 8380, 9405.24},
    ValidationRow{"torchtitan Llama 3.1 70B, 256 GPUs", "torchtitan-llama3-70b-x256", kSim, 9, 256,
                  false, 829, 897.92},
    ValidationRow{"torchtitan Llama 3.1 70B, 256 GPUs, async TP",
                  "torchtitan-llama3-70b-x256-async-tp", kSim, 9, 256, false, 876, 985.19},
    ValidationRow{"torchtitan Llama 3.1 405B, 512 GPUs, 1F1B", "torchtitan-llama3-405b-x512", kSim,
                  9, 512, false, 100, 115.96},
    ValidationRow{"torchtitan Llama 3.1 405B, 512 GPUs, interleaved 1F1B",
                  "torchtitan-llama3-405b-x512-interleaved", kSim, 9, 512, false, 128, 149.81},
    // Megatron-Bridge on DGX H100 at 700 W, FP8: tokens/s per GPU.
    ValidationRow{"Megatron-Bridge Llama 3 8B, 8 GPUs", "megatron-bridge-h100-llama3-8b", kSim, 9,
                  8, false, 14451, 14080},
    ValidationRow{"Megatron-Bridge Llama 3 70B, 64 GPUs", "megatron-bridge-h100-llama3-70b", kSim,
                  9, 64, false, 1602, 1595.33},
    ValidationRow{"Megatron-Bridge Llama 3.1 405B, 1,024 GPUs", "megatron-bridge-h100-llama3-405b",
                  kSim, 9, 1024, false, 292, 328.91},
    // torchtitan 0.3.0 itself under `myriad run` on grand-teton-h100.toml (2026-12-07), the
    // tokens/s per GPU it logs (its steady steps).
    ValidationRow{"torchtitan Llama 3 8B, 8 GPUs, eager (myriad run)", "torchtitan-llama3-8b-x8",
                  kRun, 9, 8, false, 5762, 7698},
    ValidationRow{"torchtitan Llama 3 8B, 128 GPUs, eager (myriad run)",
                  "torchtitan-llama3-8b-x128", kRun, 9, 128, false, 5605, 7707},
    ValidationRow{"torchtitan Llama 3 8B, 8 GPUs, compile (myriad run)",
                  "torchtitan-llama3-8b-x8-compile", kRun, 9, 8, false, 6667, 8939},
};

std::string_view ArchitectureName(int major) {
  switch (major) {
    case 8:
      return "Ampere";
    case 9:
      return "Hopper";
    case 10:
      return "Blackwell";
    default:
      return "these";
  }
}

}  // namespace

std::span<const ValidationRow> ValidationSet() { return kRows; }

const ValidationRow* FindValidationRow(std::string_view scenario, PredictedBy by) {
  for (const ValidationRow& row : kRows)
    if (row.scenario == scenario && row.by == by) return &row;
  return nullptr;
}

ValidationSpread SpreadFor(PredictedBy by, const netmodel::GpuSpec& gpu, bool moe) {
  ValidationSpread spread;
  std::vector<double> errors;
  for (const ValidationRow& row : kRows) {
    if (row.by != by || row.architecture != gpu.compute_capability_major ||
        (by == PredictedBy::kSimulate && row.moe != moe))
      continue;
    errors.push_back(row.error());
    spread.min_gpus = spread.rows == 0 ? row.gpus : std::min(spread.min_gpus, row.gpus);
    spread.max_gpus = std::max(spread.max_gpus, row.gpus);
    ++spread.rows;
    if (std::abs(row.error()) > std::abs(spread.worst_error)) spread.worst_error = row.error();
  }
  if (errors.empty()) return spread;
  std::sort(errors.begin(), errors.end());
  const std::size_t n = errors.size();
  spread.median_error = n % 2 == 1 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  return spread;
}

std::string ValidationLine(PredictedBy by, const netmodel::GpuSpec& gpu, bool moe) {
  const ValidationSpread s = SpreadFor(by, gpu, moe);
  // `myriad run` runs any program; its rows are training programs whatever the model.
  const std::string kind =
      by == PredictedBy::kSimulate
          ? fmt::format("{} training on {} GPUs under `myriad simulate`", moe ? "MoE" : "dense",
                        ArchitectureName(gpu.compute_capability_major))
          : fmt::format("training programs on {} GPUs under `myriad run`",
                        ArchitectureName(gpu.compute_capability_major));
  if (s.rows == 0)
    return fmt::format("validation: no published row of {} yet: no error bar (docs/validation.md)",
                       kind);
  return fmt::format(
      "validation: {}, {} published row{} ({}{} GPUs): median error {:+.1f}%, worst {:+.1f}% "
      "(docs/validation.md)",
      kind, s.rows, s.rows == 1 ? "" : "s",
      s.min_gpus == s.max_gpus ? "" : fmt::format("{}-", s.min_gpus), s.max_gpus,
      100 * s.median_error, 100 * s.worst_error);
}

}  // namespace myriad::emulator
