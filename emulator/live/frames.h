// Decoding the frames a process sends Myriad (interpose/protocol/wire.h): each payload is
// checked whole before anything acts on it. Pure functions, so that a fuzzer can drive them
// (tests/fuzz/wire_fuzzer.cc); the server (live_server.cc) acts on what they return.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "myriad/status.h"
#include "protocol/wire.h"

namespace myriad::emulator::frames {

// Host threads a process may have (their numbers on the wire).
inline constexpr std::uint32_t kMaxThread = 4096;
// The longest communicator name a data frame may carry.
inline constexpr std::uint32_t kMaxCommName = 4096;

Status DecodeHello(const std::string& payload, wire::Hello* hello);
// (id, name) pairs in order. Whether each id is the next or an old one is the caller's check.
Status DecodeNames(const std::string& payload,
                   std::vector<std::pair<std::uint32_t, std::string>>* names);
// A batch, or an order frame (device wire::kNoDevice, no ops).
Status DecodeOps(const std::string& payload, wire::OpsHeader* header,
                 std::vector<wire::WireOp>* ops);
Status DecodeData(const std::string& payload, wire::DataHeader* header, std::string* comm,
                  std::string* bytes);
Status DecodeThread(const std::string& payload, wire::ThreadState* report);
// (count, CUDA error name) pairs; names are at most kMaxCommName bytes of printable text.
Status DecodeErrors(const std::string& payload,
                    std::vector<std::pair<std::uint32_t, std::string>>* errors);
// A module file (kModule): its id (> 0), then its path: absolute, printable, at most
// wire::kMaxModulePath bytes.
Status DecodeModule(const std::string& payload, std::uint32_t* id, std::string* path);
// A module's PTX (kModulePtx): its id (> 0), then the PTX, non-empty; at most
// wire::kMaxFrameBytes in all.
Status DecodeModulePtx(const std::string& payload, std::uint32_t* id, std::string* ptx);
// {u32 contents id (not 0)}, then 1 to kMaxKnownContents bytes.
Status DecodeDeviceContents(const std::string& payload, std::uint32_t* id, std::string* bytes);
// Any frame a process may send, by its header: what the server would decode, for the fuzzer.
Status Decode(const wire::FrameHeader& header, const std::string& payload);

}  // namespace myriad::emulator::frames
