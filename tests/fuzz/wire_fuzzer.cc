// libFuzzer target: the decoder of the frames processes send Myriad (emulator/live/frames.h).
// The input is a stream of frames as a socket would carry them: each header's type, then a
// payload of up to its length (cut short where the input ends); every frame must decode or
// fail with a Status.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "live/frames.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::size_t at = 0;
  while (size - at >= sizeof(myriad::wire::FrameHeader)) {
    myriad::wire::FrameHeader header;
    std::memcpy(&header, data + at, sizeof(header));
    at += sizeof(header);
    const std::size_t length = std::min<std::size_t>(header.length, size - at);
    const std::string payload(reinterpret_cast<const char*>(data + at), length);
    at += length;
    header.length = static_cast<std::uint32_t>(length);
    const myriad::Status st = myriad::emulator::frames::Decode(header, payload);
    if (!st.ok()) myriad::fuzz::CheckMessage(st.message());
  }
  return 0;
}
