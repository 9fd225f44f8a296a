#include "frames.h"

#include <fmt/format.h>

#include <cstring>

namespace myriad::emulator::frames {
namespace {

// A payload of repeated {u32 number, u32 length, that many bytes} (names, error tallies); false
// if it does not split into them exactly.
bool ReadNumberedStrings(const std::string& payload,
                         std::vector<std::pair<std::uint32_t, std::string>>* out) {
  std::size_t offset = 0;
  while (offset < payload.size()) {
    std::uint32_t number = 0, length = 0;
    if (!wire::Read(payload, offset, number) || !wire::Read(payload, offset, length) ||
        payload.size() - offset < length)
      return false;
    out->emplace_back(number, payload.substr(offset, length));
    offset += length;
  }
  return true;
}

}  // namespace

Status DecodeHello(const std::string& payload, wire::Hello* hello) {
  std::size_t offset = 0;
  if (!wire::Read(payload, offset, *hello) || offset != payload.size())
    return Status::InvalidArgument("a malformed hello");
  return Status::Ok();
}

Status DecodeNames(const std::string& payload,
                   std::vector<std::pair<std::uint32_t, std::string>>* names) {
  if (!ReadNumberedStrings(payload, names))
    return Status::InvalidArgument("a malformed name table");
  for (const auto& [id, name] : *names)
    if (id == 0) return Status::InvalidArgument("a malformed name table");
  return Status::Ok();
}

Status DecodeOps(const std::string& payload, wire::OpsHeader* header,
                 std::vector<wire::WireOp>* ops) {
  std::size_t offset = 0;
  if (!wire::Read(payload, offset, *header) ||
      (payload.size() - offset) / sizeof(wire::WireOp) != header->count ||
      (payload.size() - offset) % sizeof(wire::WireOp) != 0 || header->thread > kMaxThread ||
      header->thread_time_ps < 0 || header->after_thread > kMaxThread)
    return Status::InvalidArgument("a malformed op batch");
  if (header->device == wire::kNoDevice && header->count != 0)
    return Status::InvalidArgument("a malformed op batch");
  ops->resize(header->count);
  if (!ops->empty())
    std::memcpy(ops->data(), payload.data() + offset, ops->size() * sizeof(wire::WireOp));
  return Status::Ok();
}

Status DecodeData(const std::string& payload, wire::DataHeader* header, std::string* comm,
                  std::string* bytes) {
  std::size_t offset = 0;
  if (!wire::Read(payload, offset, *header) || header->comm_length > kMaxCommName ||
      header->bytes > wire::kMaxDataBytes ||
      payload.size() - offset != std::uint64_t{header->comm_length} + header->bytes ||
      header->thread > kMaxThread || header->time_ps < 0)
    return Status::InvalidArgument("a malformed data frame");
  *comm = payload.substr(offset, header->comm_length);
  *bytes = payload.substr(offset + header->comm_length);
  return Status::Ok();
}

Status DecodeThread(const std::string& payload, wire::ThreadState* report) {
  std::size_t offset = 0;
  if (!wire::Read(payload, offset, *report) || report->thread > kMaxThread || report->time < 0 ||
      static_cast<std::uint32_t>(report->state) > 5)
    return Status::InvalidArgument("a malformed thread report");
  return Status::Ok();
}

Status DecodeErrors(const std::string& payload,
                    std::vector<std::pair<std::uint32_t, std::string>>* errors) {
  if (!ReadNumberedStrings(payload, errors))
    return Status::InvalidArgument("a malformed error tally");
  for (const auto& [count, name] : *errors) {
    if (name.empty() || name.size() > kMaxCommName)
      return Status::InvalidArgument("a malformed error tally");
    for (unsigned char c : name)
      if (c < 0x21 || c > 0x7e) return Status::InvalidArgument("a malformed error tally");
  }
  return Status::Ok();
}

namespace {

// The module id that leads a module frame; 0 (no id) is not one.
bool ReadModuleId(const std::string& payload, std::uint32_t* id) {
  if (payload.size() < sizeof *id) return false;
  std::memcpy(id, payload.data(), sizeof *id);
  return *id > 0;
}

}  // namespace

Status DecodeModule(const std::string& payload, std::uint32_t* id, std::string* path) {
  if (!ReadModuleId(payload, id)) return Status::InvalidArgument("a malformed module path");
  const std::string_view text = std::string_view(payload).substr(sizeof *id);
  if (text.empty() || text.size() > wire::kMaxModulePath || text[0] != '/')
    return Status::InvalidArgument("a malformed module path");
  for (unsigned char c : text)
    if (c < 0x20 || c == 0x7f) return Status::InvalidArgument("a malformed module path");
  *path = std::string(text);
  return Status::Ok();
}

Status DecodeModulePtx(const std::string& payload, std::uint32_t* id, std::string* ptx) {
  if (!ReadModuleId(payload, id) || payload.size() == sizeof *id ||
      payload.size() > wire::kMaxFrameBytes)
    return Status::InvalidArgument("a malformed module");
  *ptx = payload.substr(sizeof *id);
  return Status::Ok();
}

Status DecodeDeviceContents(const std::string& payload, std::uint32_t* id, std::string* bytes) {
  if (!ReadModuleId(payload, id) || *id == 0 || payload.size() == sizeof *id ||
      payload.size() > sizeof *id + wire::kMaxKnownContents)
    return Status::InvalidArgument("malformed device contents");
  *bytes = payload.substr(sizeof *id);
  return Status::Ok();
}

Status Decode(const wire::FrameHeader& header, const std::string& payload) {
  if (header.length != payload.size() || payload.size() > wire::MaxPayload(header.type))
    return Status::InvalidArgument("a frame whose length is not its payload's");
  switch (header.type) {
    case wire::FrameType::kHello: {
      wire::Hello hello;
      return DecodeHello(payload, &hello);
    }
    case wire::FrameType::kNames: {
      std::vector<std::pair<std::uint32_t, std::string>> names;
      return DecodeNames(payload, &names);
    }
    case wire::FrameType::kOps: {
      wire::OpsHeader ops_header;
      std::vector<wire::WireOp> ops;
      return DecodeOps(payload, &ops_header, &ops);
    }
    case wire::FrameType::kData: {
      wire::DataHeader data;
      std::string comm, bytes;
      return DecodeData(payload, &data, &comm, &bytes);
    }
    case wire::FrameType::kThread: {
      wire::ThreadState report;
      return DecodeThread(payload, &report);
    }
    case wire::FrameType::kErrors: {
      std::vector<std::pair<std::uint32_t, std::string>> errors;
      return DecodeErrors(payload, &errors);
    }
    case wire::FrameType::kModule: {
      std::uint32_t id = 0;
      std::string path;
      return DecodeModule(payload, &id, &path);
    }
    case wire::FrameType::kModulePtx: {
      std::uint32_t id = 0;
      std::string ptx;
      return DecodeModulePtx(payload, &id, &ptx);
    }
    case wire::FrameType::kDeviceContents: {
      std::uint32_t id = 0;
      std::string bytes;
      return DecodeDeviceContents(payload, &id, &bytes);
    }
    default:
      return Status::InvalidArgument(
          fmt::format("an unknown frame type {}", static_cast<std::uint32_t>(header.type)));
  }
}

}  // namespace myriad::emulator::frames
