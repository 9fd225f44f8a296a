// Names of op kinds, copy kinds, data types and reductions, as traces and reports write them.
#include "myriad/emulator/op.h"

#include <array>
#include <string>

namespace myriad::emulator {
namespace {

template <typename Enum, std::size_t N>
Result<Enum> ParseName(const std::array<std::string_view, N>& names, std::string_view name,
                       std::string_view what) {
  std::string known;
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
    known += (i ? ", " : "") + std::string(names[i]);
  }
  return Status::InvalidArgument("unknown " + std::string(what) + " '" + std::string(name) +
                                 "' (known: " + known + ")");
}

constexpr std::array<std::string_view, kNumOpKinds> kOpKindNames = {
    "kernel",      "memcpy",      "memset",      "event_record", "stream_wait_event",
    "event_sync",  "event_query", "stream_sync", "device_sync",  "stream_create",
    "malloc",      "free",        "collective",  "send",         "recv",
    "group_start", "group_end",   "host",        "marker"};

constexpr std::array<std::string_view, 4> kMemcpyKindNames = {"h2d", "d2h", "d2d", "peer"};

constexpr std::array<std::string_view, 4> kAttentionKernelNames = {"default", "fa2", "fa3",
                                                                   "cudnn"};

constexpr std::array<std::string_view, 13> kDataTypeNames = {
    "int8",    "uint8",   "int32",    "uint32", "int64",  "uint64", "float16",
    "float32", "float64", "bfloat16", "f8e4m3", "f8e5m2", "tf32"};
constexpr std::array<int, 13> kDataTypeSizes = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1, 4};

constexpr std::array<std::string_view, 5> kReduceOpNames = {"sum", "prod", "max", "min", "avg"};

}  // namespace

std::string_view ToString(OpKind kind) { return kOpKindNames[static_cast<int>(kind)]; }
Result<OpKind> ParseOpKind(std::string_view name) {
  return ParseName<OpKind>(kOpKindNames, name, "op");
}

std::string_view ToString(MemcpyKind kind) { return kMemcpyKindNames[static_cast<int>(kind)]; }
Result<MemcpyKind> ParseMemcpyKind(std::string_view name) {
  return ParseName<MemcpyKind>(kMemcpyKindNames, name, "memcpy kind");
}

int SizeOf(DataType type) { return kDataTypeSizes[static_cast<int>(type)]; }
std::string_view ToString(DataType type) { return kDataTypeNames[static_cast<int>(type)]; }
std::string_view ToString(AttentionKernel kernel) {
  return kAttentionKernelNames[static_cast<int>(kernel)];
}

Result<AttentionKernel> ParseAttentionKernel(std::string_view name) {
  return ParseName<AttentionKernel>(kAttentionKernelNames, name, "attention kernel");
}

Result<DataType> ParseDataType(std::string_view name) {
  // NCCL's and nccl-tests' aliases.
  if (name == "half" || name == "fp16") return DataType::kFloat16;
  if (name == "float" || name == "fp32") return DataType::kFloat32;
  if (name == "double" || name == "fp64") return DataType::kFloat64;
  if (name == "bf16") return DataType::kBfloat16;
  if (name == "char") return DataType::kInt8;
  if (name == "int") return DataType::kInt32;
  return ParseName<DataType>(kDataTypeNames, name, "data type");
}

std::string_view ToString(ReduceOp op) { return kReduceOpNames[static_cast<int>(op)]; }
Result<ReduceOp> ParseReduceOp(std::string_view name) {
  return ParseName<ReduceOp>(kReduceOpNames, name, "reduction");
}

NameId NameTable::Intern(std::string_view name) {
  auto it = ids_.find(std::string(name));
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<NameId>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(names_.back(), id);
  return id;
}

NameId NameTable::Find(std::string_view name) const {
  auto it = ids_.find(std::string(name));
  return it == ids_.end() ? 0 : it->second;
}

}  // namespace myriad::emulator
