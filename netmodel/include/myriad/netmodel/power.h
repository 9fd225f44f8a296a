// Sustained clocks under a board power limit (docs/kernel-timing.md, "Clocks under a power
// limit"). A GPU's power manager lowers the SM clock until the board's draw meets its limit.
// A dense tensor-core load draws the most: held for more than a short benchmark's tens of
// milliseconds, it runs below the clock the catalog's rates were measured at. Memory-bound
// and CUDA-core work draws less and keeps that clock (its rate is set by HBM, whose clock the
// power manager does not lower).
#pragma once

#include "myriad/netmodel/hardware.h"
#include "myriad/status.h"

namespace myriad::netmodel {

// The fraction of the rates' clock a sustained dense tensor-core load holds under the GPU's
// power limit: the f in idle + (tensor_power - idle) f^exponent = power_limit, at most 1.
// 1 when the GPU has no power model.
double SustainedTensorClock(const GpuSpec& gpu);

// `gpu` with its tensor-core rates (BF16, FP8) at the sustained clock: what a training step's
// GEMMs and attention run at. Peaks quoted to users (MFU) stay the datasheet's.
GpuSpec AtSustainedClock(const GpuSpec& gpu);

// The power model through two published operating points: a sustained tensor-core load ran
// at `clock_a` of the rates' clock under limit `limit_a`, and at `clock_b` under `limit_b`.
// Sets tensor_power and clock_power_exponent given idle_power; fails when the points do not
// describe a clock that falls as the limit does.
Status FitPowerModel(double limit_a, double clock_a, double limit_b, double clock_b, GpuSpec* gpu);

// Checks a limit against the GPU's power model: the GPU has one, and the limit is above its
// idle draw.
Status CheckPowerLimit(const GpuSpec& gpu, double limit);

}  // namespace myriad::netmodel
