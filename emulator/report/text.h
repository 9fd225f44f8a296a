// Text the report's formats share (the summary and the HTML page), inside report/.
#pragma once

#include <cstdint>
#include <string>

namespace myriad::emulator {

// "64.00 MiB": binary units with two decimals, whole bytes below 1 KiB.
std::string ByteSize(std::uint64_t bytes);

}  // namespace myriad::emulator
