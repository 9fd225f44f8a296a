// The power model of power.h: DVFS with dynamic power ~ clock^exponent above a fixed idle draw.
#include "myriad/netmodel/power.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace myriad::netmodel {

double SustainedTensorClock(const GpuSpec& gpu) {
  if (!(gpu.tensor_power > gpu.idle_power) || !(gpu.clock_power_exponent > 0) ||
      !(gpu.power_limit > gpu.idle_power))
    return 1.0;
  const double headroom = (gpu.power_limit - gpu.idle_power) / (gpu.tensor_power - gpu.idle_power);
  return std::min(1.0, std::pow(headroom, 1.0 / gpu.clock_power_exponent));
}

GpuSpec AtSustainedClock(const GpuSpec& gpu) {
  GpuSpec sustained = gpu;
  const double clock = SustainedTensorClock(gpu);
  sustained.bf16_flops *= clock;
  sustained.fp8_flops *= clock;
  return sustained;
}

Status FitPowerModel(double limit_a, double clock_a, double limit_b, double clock_b, GpuSpec* gpu) {
  const double idle = gpu->idle_power;
  // Ordered so that a is the lower limit.
  if (limit_a > limit_b) std::swap(limit_a, limit_b), std::swap(clock_a, clock_b);
  if (!(limit_a > idle) || !(limit_b > limit_a) || !(clock_a > 0) || !(clock_b > clock_a) ||
      !(clock_b <= 1))
    return Status::InvalidArgument(
        "power model of " + gpu->key +
        ": the operating points must have limits above the idle draw and a clock that falls "
        "with the limit, at most the rates' clock");
  // (limit - idle) = (tensor_power - idle) clock^exponent at both points.
  gpu->clock_power_exponent =
      std::log((limit_a - idle) / (limit_b - idle)) / std::log(clock_a / clock_b);
  gpu->tensor_power = idle + (limit_b - idle) / std::pow(clock_b, gpu->clock_power_exponent);
  return Status::Ok();
}

Status CheckPowerLimit(const GpuSpec& gpu, double limit) {
  // A limit Myriad cannot apply would be taken and do nothing: refused instead.
  if (!(gpu.tensor_power > 0))
    return Status::InvalidArgument("no power model for " + gpu.key +
                                   ": its clock under a power limit is not known "
                                   "(docs/kernel-timing.md, \"Clocks under a power limit\")");
  if (!(limit > gpu.idle_power))
    return Status::InvalidArgument(
        "a power limit must be above the GPU's idle draw (" +
        std::to_string(static_cast<long long>(std::lround(gpu.idle_power))) + " W for " + gpu.key +
        ")");
  return Status::Ok();
}

}  // namespace myriad::netmodel
