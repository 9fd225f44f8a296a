// The power model (netmodel/power.h): the clock a sustained tensor-core load holds under a
// board power limit.
#include "myriad/netmodel/power.h"

#include <gtest/gtest.h>

#include <cmath>

#include "myriad/netmodel/hardware.h"

namespace myriad::netmodel {
namespace {

GpuSpec H100At(double limit) {
  GpuSpec gpu = *FindGpu("h100-sxm");
  gpu.power_limit = limit;
  return gpu;
}

TEST(PowerTest, H100ModelMeetsTheOperatingPointsItWasSetBy) {
  // gpus.cc: 0.707 of the short-benchmark clock at 500 W, 0.859 at the default 700 W.
  EXPECT_DOUBLE_EQ(H100At(700).power_limit, FindGpu("h100-sxm")->power_limit);
  EXPECT_NEAR(SustainedTensorClock(H100At(500)), 0.707, 1e-9);
  EXPECT_NEAR(SustainedTensorClock(H100At(700)), 0.859, 1e-9);
  // The exponent lies between a fixed voltage (1) and a voltage in proportion to the clock (3).
  const GpuSpec h100 = H100At(700);
  EXPECT_GT(h100.clock_power_exponent, 1);
  EXPECT_LT(h100.clock_power_exponent, 3);
  EXPECT_GT(h100.tensor_power, 700);
}

TEST(PowerTest, ALowerLimitLowersTheSustainedClock) {
  double previous = 0;
  for (double limit : {150.0, 300.0, 400.0, 500.0, 600.0, 700.0, 800.0}) {
    const double clock = SustainedTensorClock(H100At(limit));
    EXPECT_GT(clock, previous) << limit;
    EXPECT_LE(clock, 1.0) << limit;
    previous = clock;
  }
  // A limit above what the load draws at full clock leaves the clock alone.
  EXPECT_DOUBLE_EQ(SustainedTensorClock(H100At(2000)), 1.0);
}

TEST(PowerTest, OnlyTensorCoreRatesSlow) {
  const GpuSpec at500 = AtSustainedClock(H100At(500));
  const GpuSpec boost = *FindGpu("h100-sxm");
  EXPECT_NEAR(at500.bf16_flops / boost.bf16_flops, 0.707, 1e-9);
  EXPECT_NEAR(at500.fp8_flops / boost.fp8_flops, 0.707, 1e-9);
  EXPECT_EQ(at500.fp32_flops, boost.fp32_flops);
  EXPECT_EQ(at500.hbm_bandwidth, boost.hbm_bandwidth);
}

TEST(PowerTest, GpusWithoutAModelKeepTheirClock) {
  GpuSpec a100 = *FindGpu("a100-sxm-80gb");
  EXPECT_EQ(a100.tensor_power, 0);
  a100.power_limit = 200;
  EXPECT_DOUBLE_EQ(SustainedTensorClock(a100), 1.0);
}

TEST(PowerTest, FitRefusesPointsWhoseClockDoesNotFallWithTheLimit) {
  GpuSpec gpu = H100At(700);
  EXPECT_FALSE(FitPowerModel(500, 0.9, 700, 0.8, &gpu).ok());
  EXPECT_FALSE(FitPowerModel(50, 0.5, 700, 0.8, &gpu).ok());  // below the idle draw
  EXPECT_FALSE(FitPowerModel(500, 0.7, 700, 1.2, &gpu).ok());
  ASSERT_TRUE(FitPowerModel(700, 0.859, 500, 0.707, &gpu).ok());  // either order
  EXPECT_NEAR(SustainedTensorClock(H100At(500)), SustainedTensorClock([&] {
                GpuSpec g = gpu;
                g.power_limit = 500;
                return g;
              }()),
              1e-9);
}

TEST(PowerTest, ALimitBelowIdleIsRefused) {
  EXPECT_FALSE(CheckPowerLimit(H100At(700), 60).ok());
  EXPECT_TRUE(CheckPowerLimit(H100At(700), 300).ok());
  // A GPU without a model cannot take a limit: it would change nothing.
  EXPECT_FALSE(CheckPowerLimit(*FindGpu("a100-sxm-80gb"), 250).ok());
}

}  // namespace
}  // namespace myriad::netmodel
