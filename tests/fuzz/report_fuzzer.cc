// libFuzzer target: the gate's report reader (JSON, nesting, headline metrics). Any input
// must flatten or fail with a Status.
#include <cstddef>
#include <cstdint>
#include <string>

#include "myriad/emulator/gate.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  auto flat = myriad::emulator::FlattenReport(json, "report.json");
  if (!flat.ok()) myriad::fuzz::CheckMessage(flat.status().message());
  return 0;
}
