// How sure a prediction is: the published rows Myriad's predictions are checked against
// (docs/validation.md), built into the binary, and the spread of their errors for a run of the
// same kind. The validation tests keep each row's prediction equal to what Myriad predicts
// today, so the spread a summary quotes is the current model's.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "myriad/netmodel/hardware.h"

namespace myriad::emulator {

enum class PredictedBy { kSimulate, kRun };

struct ValidationRow {
  std::string_view name;  // "torchtitan Llama 3 8B, 8 GPUs, eager"
  // A simulate row's scenario under scenarios/validation/, without ".toml"; a run row's id
  // (the torchtitan row it reproduces).
  std::string_view scenario;
  PredictedBy by;
  int architecture;  // the GPUs' compute capability major: 8 Ampere, 9 Hopper, 10 Blackwell
  int gpus;
  bool moe;
  double published, predicted;  // in the row's unit (tokens/s or TFLOP/s per GPU)
  double error() const { return predicted / published - 1; }
};

std::span<const ValidationRow> ValidationSet();

// The row of `scenario` predicted by `by`, or nullptr.
const ValidationRow* FindValidationRow(std::string_view scenario, PredictedBy by);

struct ValidationSpread {
  int rows = 0;
  int min_gpus = 0, max_gpus = 0;
  double median_error = 0;  // signed: + is too fast
  double worst_error = 0;   // the largest in size, signed
};

// The rows of the same kind as a run: the same tool and GPU architecture, and for `simulate`
// dense or MoE (`moe` is not used for `run`).
ValidationSpread SpreadFor(PredictedBy by, const netmodel::GpuSpec& gpu, bool moe);

// One line for a summary: "validation: dense training on Hopper GPUs under `myriad simulate`,
// 5 published rows (8-512 GPUs): median error +16.2%, worst +48.7% (docs/validation.md)".
std::string ValidationLine(PredictedBy by, const netmodel::GpuSpec& gpu, bool moe);

}  // namespace myriad::emulator
