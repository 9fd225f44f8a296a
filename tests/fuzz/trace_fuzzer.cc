// libFuzzer target: the trace readers (JSON Lines and binary, told apart by the file's first
// bytes as `myriad replay` does). An input is opened and every rank's ops read to the end;
// each must come back as ops or a Status.
#include <cstddef>
#include <cstdint>

#include "myriad/emulator/op_source.h"
#include "myriad/emulator/trace.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = myriad::fuzz::WriteInput(data, size, "trace");
  auto workload = myriad::emulator::OpenTrace(path);
  if (!workload.ok()) {
    myriad::fuzz::CheckMessage(workload.status().message());
    return 0;
  }
  for (int rank = 0; rank < (*workload)->world_size(); ++rank) {
    auto source = (*workload)->OpenRank(rank);
    if (!source.ok()) return 0;
    myriad::emulator::Op op;
    for (;;) {
      auto more = (*source)->Next(op);
      if (!more.ok()) myriad::fuzz::CheckMessage(more.status().message());
      if (!more.ok() || !*more) break;
    }
  }
  return 0;
}
