// Kernels no model knows: work from the launch (docs/kernel-timing.md, "Kernels no model
// knows").
#include "timing/launch_guess.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "protocol/kernel_signature.h"
#include "timing/library_model.h"

namespace myriad::emulator::timing {
namespace {

// Bytes of the element a pointer parameter points to ("float const*", "__nv_bfloat16*"); 0
// for a parameter that is not a pointer. Unknown element types (structs) count 4.
double PointeeSize(std::string_view type) {
  const std::size_t star = type.rfind('*');
  if (star == std::string_view::npos) return 0;
  std::string t(type.substr(0, star));
  for (const char* qualifier : {"const", "volatile", "__restrict__", "__restrict"}) {
    for (std::size_t at; (at = t.find(qualifier)) != std::string::npos;)
      t.erase(at, std::string_view(qualifier).size());
  }
  t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
  if (t.find('*') != std::string::npos) return 8;  // a pointer to pointers: the pointers
  struct Known {
    std::string_view name;
    double size;
  };
  static constexpr Known kKnown[] = {{"double", 8},         {"float", 4},
                                     {"float2", 8},         {"float4", 16},
                                     {"double2", 16},       {"int", 4},
                                     {"unsignedint", 4},    {"unsigned", 4},
                                     {"int4", 16},          {"int2", 8},
                                     {"long", 8},           {"unsignedlong", 8},
                                     {"longlong", 8},       {"unsignedlonglong", 8},
                                     {"short", 2},          {"unsignedshort", 2},
                                     {"__half", 2},         {"half", 2},
                                     {"__nv_bfloat16", 2},  {"__half2", 4},
                                     {"__nv_bfloat162", 4}, {"c10::Half", 2},
                                     {"c10::BFloat16", 2},  {"char", 1},
                                     {"signedchar", 1},     {"unsignedchar", 1},
                                     {"bool", 1},           {"__nv_fp8_e4m3", 1},
                                     {"__nv_fp8_e5m2", 1},  {"int8_t", 1},
                                     {"uint8_t", 1},        {"int64_t", 8},
                                     {"int32_t", 4},        {"uint32_t", 4},
                                     {"size_t", 8},         {"void", 4}};
  for (const Known& k : kKnown)
    if (t == k.name) return k.size;
  return 4;
}

}  // namespace

double ArrayElementBytes(std::string_view demangled) {
  double element_bytes = 0;
  wire::ForEachParameter(demangled,
                         [&](std::string_view type) { element_bytes += PointeeSize(type); });
  return element_bytes;
}

bool GuessKernelWork(double element_bytes, std::span<const std::uint64_t> pointer_bytes, Op* op) {
  const double threads = static_cast<double>(op->grid.x) * op->grid.y * op->grid.z * op->block.x *
                         op->block.y * op->block.z;
  if (!(threads > 0)) return false;
  double bytes =
      element_bytes > 0 ? threads * element_bytes : threads * kGuessBytesPerThreadWithoutArrays;
  double reach = 0;
  bool reach_known = !pointer_bytes.empty();
  for (std::uint64_t b : pointer_bytes) {
    reach += static_cast<double>(b);
    reach_known = reach_known && b > 0;
  }
  if (reach_known) bytes = std::min(bytes, reach);
  if (!(bytes > 0) || !std::isfinite(bytes) || bytes > 1e15) return false;
  op->bytes = static_cast<std::uint64_t>(bytes);
  op->bytes_guessed = true;
  return true;
}

std::optional<SimTime> LaunchGuessProvider::Duration(const Op& op, const NameTable&) const {
  if (op.kind != OpKind::kKernel || !op.bytes_guessed || op.bytes == 0) return std::nullopt;
  return SecondsToSim(StreamingKernelSeconds(op.bytes, gpu_));
}

}  // namespace myriad::emulator::timing
