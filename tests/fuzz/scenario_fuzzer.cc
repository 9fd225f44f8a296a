// libFuzzer target: the scenario reader (TOML, units, bounds, includes). Any input must load
// or fail with a Status; a crash, a hang or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>

#include "myriad/emulator/scenario.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = myriad::fuzz::WriteInput(data, size, "scenario.toml");
  auto scenario = myriad::emulator::LoadScenario(path);
  if (scenario.ok()) (void)scenario->cluster.total_gpus();
  if (!scenario.ok()) myriad::fuzz::CheckMessage(scenario.status().message());
  return 0;
}
